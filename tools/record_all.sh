#!/usr/bin/env bash
# Records the committed trace set into traces/ (run tools/setup_venv.sh first).
# OUT=DIR writes them there instead; a first argument NAME records that trace alone.
# Each line: output name, scene, recorder options. Sizes are kept to a few MB per trace: big
# scenes get fewer worlds/steps, scenes whose contacts start late are subsampled (--every) over
# the whole run, aloha_clutter records a subsampled window around its wake events.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=${OUT:-traces}
mkdir -p "$OUT"
only=${1:-}

rec() {
  local name=$1 scene=$2
  shift 2
  if [[ -n "$only" && "$only" != "$name" ]]; then return; fi
  printf '%-36s ' "$name"
  "$PY" tools/record_trace.py "$scene" --out "$OUT/$name.npz" "$@"
}

rec adhesion_active_adhesion adhesion_active_adhesion --worlds 3 --steps 200
rec aloha_clutter aloha_clutter --worlds 3 --start 1230 --every 2 --steps 320 \
    --replay pick_clutter.npz --qvel-noise 0.01 --ctrl-noise 0.05
rec benchmark_humanoid200 benchmark_humanoid200 --worlds 3 --steps 200
rec flex_bunny_multicell flex_bunny_multicell --worlds 3 --steps 150 --every 2
rec flex_bunny_quadratic flex_bunny_quadratic --worlds 3 --steps 200 --every 4
rec flex_bunny_shell flex_bunny_shell --worlds 2 --steps 120 --every 2
rec flex_cloth_sdf flex_cloth_sdf --worlds 3 --steps 150 --every 2
rec flex_flag flex_flag --worlds 2 --steps 100 --every 2
rec flex_floppy flex_floppy --worlds 3 --steps 200 --every 4
rec flex_jelly flex_jelly --worlds 3 --steps 200 --every 4
rec flex_pancake flex_pancake --worlds 3 --steps 150 --every 2
# Any velocity perturbation (even 1e-7) makes a second world blow up within ~50 steps: one world.
rec flex_poncho_edgeequality flex_poncho_edgeequality --worlds 1 --steps 100 --every 2
rec flex_press flex_press --worlds 3 --steps 200 --every 4
rec flex_pulley flex_pulley --worlds 3 --steps 200
rec flex_quadratic flex_quadratic --worlds 3 --steps 200 --every 4
rec flex_softbox flex_softbox --worlds 2 --steps 100 --every 2
rec flex_sphere_full flex_sphere_full --worlds 2 --steps 80 --every 2
rec flex_strain flex_strain --worlds 3 --steps 150 --every 2
rec flex_trampoline flex_trampoline --worlds 3 --steps 200 --every 4
rec hammock hammock --worlds 3 --steps 150 --every 2
rec humanoid_100_humanoids humanoid_100_humanoids --worlds 2 --steps 60 --every 4
rec island_2humanoid100 island_2humanoid100 --worlds 3 --steps 200
rec island_island_efc island_island_efc --worlds 3 --steps 300
rec island_tendon_wrap_dense island_tendon_wrap --worlds 3 --steps 300 --jacobian dense
rec island_tendon_wrap_sparse island_tendon_wrap --worlds 3 --steps 300 --jacobian sparse
rec mjwarp_aloha_pot mjwarp_aloha_pot --worlds 3 --steps 150 --every 2
rec replicate_bowl replicate_bowl --worlds 3 --steps 150 --every 2
rec replicate_bunnies replicate_bunnies --worlds 2 --steps 60 --every 4
rec replicate_leaves replicate_leaves --worlds 3 --steps 150 --every 2
rec replicate_newton_cradle replicate_newton_cradle --worlds 3 --steps 300
rec replicate_particle replicate_particle --worlds 2 --steps 60 --every 4
rec replicate_tendon replicate_tendon --worlds 3 --steps 200
rec sleep_100_humanoids sleep_100_humanoids --worlds 3 --steps 150 --every 2 \
    --wake 5:3 --wake 5:40 --wake 100:70 --wake 200:3
rec sleep_dominos sleep_dominos --worlds 3 --steps 150 --every 4
# Every invalidation source in one trace: sleep switched on, eq_active toggled per script,
# velocities zeroed so resting trees fall asleep, sleeping trees pushed awake.
rec invalidation_island_efc island_island_efc --worlds 3 --steps 300 --sleep \
    --eq 40:0:0 --eq 90:1:0 --eq 150:0:1 --eq 200:1:1 --settle 100 --settle 230 \
    --wake 180:1 --wake 260:5
# Scenes of our own (traces/scenes/): closed loops across trees, multi-tree tendons, a flex
# among rigid bodies, sleep with equalities switched; recorded first as held-out checks.
S=traces/scenes
rec closed_loops $S/closed_loops/closed_loops.xml --worlds 3 --steps 150 --every 4 \
    --eq 200:5:1 --eq 400:0:0 --eq 480:0:1
# The joint equality across two trees (3) switched off and on between static ones (1-2, 4):
# learned dynamic, it ends the static equalities at 2 (classify: one run of ids).
rec closed_loops_mid $S/closed_loops/closed_loops.xml --worlds 3 --steps 150 --every 4 \
    --eq 100:3:0 --eq 200:3:1 --eq 300:5:1 --eq 400:3:0 --eq 480:3:1
rec multi_tree_tendons $S/multi_tree_tendons/multi_tree_tendons.xml --worlds 3 --steps 150 \
    --every 4 --eq 300:1:1 --eq 500:0:0
rec flex_mix $S/flex_mix/flex_mix.xml --worlds 3 --steps 150 --every 8 --eq 500:0:0 --eq 800:1:1
rec sleep_toggles $S/sleep_toggles/sleep_toggles.xml --worlds 3 --steps 150 --every 4 \
    --settle 100 --eq 160:2:1 --wake 200:3 --eq 260:3:1 --settle 300 --wake 340:14 \
    --eq 380:4:1 --eq 420:1:0 --eq 460:0:0 --wake 500:19 --settle 540
# Held-out scenes of session 70 (traces/scenes/): each feature recorded where the corpus had
# little of it. A flex contact's support takes every vertex tree of its element whatever the
# dense row's values (flex_kinds_dense, flex_pinned_dense: all-zero rows at pinned vertices).
rec flex_kinds $S/flex_kinds/flex_kinds.xml --worlds 3 --steps 200 --every 3 \
    --eq 100:0:1 --eq 300:0:0 --eq 450:0:1 --eq 500:1:0
rec flex_kinds_dense $S/flex_kinds/flex_kinds.xml --worlds 3 --steps 200 --every 3 --jacobian dense \
    --eq 100:0:1 --eq 300:0:0 --eq 450:0:1 --eq 500:1:0
rec flex_pinned_dense $S/flex_pinned/flex_pinned.xml --worlds 3 --steps 200 --every 2 \
    --qvel-noise 0.5 --jacobian dense
rec flex_stack $S/flex_stack/flex_stack.xml --worlds 3 --steps 150 --every 2
# Static rows whose dense support changes with nothing reported: the guard's case.
rec dense_flips $S/dense_flips/dense_flips.xml --worlds 3 --steps 600 --qvel-noise 0.3
rec sleep_policies $S/sleep_policies/sleep_policies.xml --worlds 3 --steps 300 --every 2 \
    --settle 100 --settle 320 --settle 480 --wake 200:2 --wake 420:0 --wake 560:7 \
    --eq 150:0:1 --eq 260:0:0 --eq 280:1:1 --eq 380:2:1 --eq 520:1:0 --eq 540:2:0
rec friction_limits_dense $S/friction_limits/friction_limits.xml --worlds 3 --steps 200 --every 2 \
    --jacobian dense
rec friction_limits_sparse $S/friction_limits/friction_limits.xml --worlds 3 --steps 200 --every 2 \
    --jacobian sparse
rec eq_mocap_sites_dense $S/eq_mocap_sites/eq_mocap_sites.xml --worlds 3 --steps 200 --every 2 \
    --jacobian dense --eq 100:5:1 --eq 150:6:1 --eq 200:7:1 --eq 250:8:1 --eq 300:0:0 --eq 320:4:0 \
    --eq 350:4:1
rec eq_mocap_sites_sparse $S/eq_mocap_sites/eq_mocap_sites.xml --worlds 3 --steps 200 --every 2 \
    --jacobian sparse --eq 100:5:1 --eq 150:6:1 --eq 200:7:1 --eq 250:8:1 --eq 300:0:0 --eq 320:4:0 \
    --eq 350:4:1
rec contact_mix $S/contact_mix/contact_mix.xml --worlds 3 --steps 200 --every 2
rec big_mix $S/big_mix/big_mix.xml --worlds 3 --steps 150 --every 3 \
    --eq 150:1:1 --eq 300:2:1 --eq 380:0:0
# Events in some worlds only (a last field of world indices): equalities switched per world,
# and worlds settled and woken at different steps, as a batch of independent simulations has them.
rec eq_mocap_perworld $S/eq_mocap_sites/eq_mocap_sites.xml --worlds 4 --steps 250 --every 2 \
    --eq 40:5:1:0/2 --eq 80:5:0:0 --eq 90:6:1:1/3 --eq 120:2:0:1 --eq 160:2:1:1 --eq 170:2:0:2 \
    --eq 200:3:0:0/1/2/3 --eq 230:3:1:3 --eq 260:0:0:2 --eq 300:7:1:0/1 --eq 340:8:1:2 \
    --eq 360:5:1:0 --eq 400:5:0:0 --eq 420:5:1:0 --eq 440:1:0:3
# The mocap body teleported (a displacement at a step) in some worlds: what hangs from it, is
# welded to it or touches it moves at once, with an equality to it switched on between jumps.
rec eq_mocap_teleport $S/eq_mocap_sites/eq_mocap_sites.xml --worlds 4 --steps 200 --every 2 \
    --mocap 40:0:0.3,0,0:0/1 --mocap 90:0:0,-0.3,-0.2:1/2 --eq 120:5:1 \
    --mocap 160:0:-0.4,0.2,0:0/3 --mocap 250:0:0,0,-0.5 --mocap 320:0:0.2,0.2,0.4:2
rec sleep_toggles_perworld $S/sleep_toggles/sleep_toggles.xml --worlds 4 --steps 150 --every 4 \
    --settle 100:0/1 --settle 160:2 --eq 180:2:1:0 --wake 200:3:0 --eq 240:3:1:1/2 \
    --settle 280:3 --wake 320:14:1 --wake 340:19:2/3 --eq 380:4:1:3 --eq 420:1:0:0/2 \
    --settle 450 --wake 500:3:1 --eq 520:0:0:1
# Held-out scenes of session 70's second sweep. A flex held by a strain equality couples only by
# its bending, the equality on or off (min_strain, without bending: its 8 cell equalities
# switched off at once; flex_bunny_shell_eqoff, with bending: its 54 switched off).
rec min_strain $S/min_strain/min_strain.xml --worlds 1 --steps 120 --jacobian dense \
    --eq 0:0:0 --eq 0:1:0 --eq 0:2:0 --eq 0:3:0 --eq 0:4:0 --eq 0:5:0 --eq 0:6:0 --eq 0:7:0
rec flex_eq2 $S/flex_eq2/flex_eq2.xml --worlds 3 --steps 150 --every 4 \
    --eq 100:0:0:1 --eq 150:1:0:0/2 --eq 200:2:0 --eq 260:3:0:0 --eq 300:0:1:1 --eq 350:2:1:1/2 \
    --eq 400:3:1 --eq 420:4:0:2
# Tendons wrapping spheres and cylinders, a pulley: dense and sparse give other islands.
rec tendon_wrap2_dense $S/tendon_wrap2/tendon_wrap2.xml --worlds 4 --steps 200 --every 2 \
    --jacobian dense --eq 60:0:1 --eq 100:1:1:0/2 --eq 140:2:1:1/3 --eq 250:0:0:2 --eq 300:1:0
rec tendon_wrap2_sparse $S/tendon_wrap2/tendon_wrap2.xml --worlds 4 --steps 200 --every 2 \
    --jacobian sparse --eq 60:0:1 --eq 100:1:1:0/2 --eq 140:2:1:1/3 --eq 250:0:0:2 --eq 300:1:0
rec sleep_mix $S/sleep_mix/sleep_mix.xml --worlds 3 --steps 175 --every 4 \
    --settle 100 --wake 200:0:1 --eq 250:0:1 --settle 300:0/2 --eq 350:1:1:0/1 --wake 400:10:0/2 \
    --wake 450:24:1 --eq 500:2:0:2 --eq 520:3:0:1 --settle 550:1/2 --wake 600:4:0 --eq 620:0:0:0
rec flex_ipc $S/flex_ipc/flex_ipc.xml --worlds 3 --steps 150 --every 3
# A shell with a Young's modulus but neither stretch nor bending (no coupling) beside a
# stretch-only one (coupled), tendons to flex vertices, a connect toggled.
for j in dense sparse; do
    rec flex_elastic_none_$j $S/flex_elastic_none/flex_elastic_none.xml --worlds 3 --steps 150 \
        --every 2 --jacobian $j --eq 100:0:1 --eq 200:0:0:1
done
# Elastic rods (1-D flexes that bend and twist, each edge by a hinge tree of its own), a ring, a
# raw rod bound to its twist hinges by name, a connect to a rod vertex toggled.
for j in dense sparse; do
    rec rod_mix_$j $S/rod_mix/rod_mix.xml --worlds 3 --steps 150 --every 3 --jacobian $j \
        --eq 150:0:1 --eq 300:0:0:1
done
# Raw rods whose elements are reversed or shuffled (twist hinges named along the chain) and one
# whose twist bodies carry a geom (bound to none).
for j in dense sparse; do
    rec rod_bindings_$j $S/rod_bindings/rod_bindings.xml --worlds 3 --steps 150 --every 2 \
        --jacobian $j --qvel-noise 0.2
done
off=(); for e in $(seq 0 53); do off+=(--eq "0:$e:0"); done
rec flex_bunny_shell_eqoff flex_bunny_shell --worlds 2 --steps 60 --every 2 "${off[@]}"
# The discrete integrator's couplings without rows: tendon springs and dampers (sleep on: the
# trees they tie never sleep, the others do), actuators of every transmission kind, passive flex
# contacts (in d.contact without rows) and, with sleep on and a coupling flex, worlds without rows
# that have islands (the couplings' own), rows switched on and off, trees settled and woken.
for j in dense sparse; do
    rec discrete_tendons_$j $S/discrete_tendons/discrete_tendons.xml --worlds 3 --steps 150 \
        --every 4 --jacobian $j --sleep --qvel-noise 0.3 --eq 120:0:1 --settle 200 --wake 260:13 \
        --wake 300:9:1/2 --eq 340:0:0:0/1 --settle 400:0/2 --wake 460:11 --wake 500:12:1
    rec discrete_actuators_$j $S/discrete_actuators/discrete_actuators.xml --worlds 3 --steps 150 \
        --every 3 --jacobian $j --eq 90:0:1 --eq 200:0:0:1 --eq 300:0:0:0/2 --eq 360:0:1:1
    rec passive_contacts_$j $S/passive_contacts/passive_contacts.xml --worlds 3 --steps 150 \
        --every 4 --jacobian $j
    rec discrete_sleep_flex_$j $S/discrete_sleep_flex/discrete_sleep_flex.xml --worlds 3 \
        --steps 150 --every 4 --jacobian $j --eq 100:0:1 --eq 200:1:1:0/1 --settle 240 \
        --wake 300:19 --wake 340:4:1/2 --eq 380:0:0 --eq 420:1:0 --settle 460:0/2 --wake 520:11
done
# Couplings native does not make under the discrete integrator: user gain and bias types (beside a
# position servo and a user gain with an affine bias, which couple), passive="true" on a 1-D rod
# and a rigid flex (their gap contacts are exclude 1, not passive), a passive board with every
# vertex pinned under a sheet that is not passive (ordinary contacts) and under a passive one
# (exclude 4); the ipc variant: a passive flex without elasticity couples nothing.
for j in dense sparse; do
    rec discrete_edge_cases_$j $S/discrete_edge_cases/discrete_edge_cases.xml --worlds 3 \
        --steps 150 --every 2 --jacobian $j
done
rec discrete_edge_cases_ipc $S/discrete_edge_cases/discrete_edge_cases_ipc.xml --worlds 3 \
    --steps 150 --every 2 --jacobian sparse
# Held-out scenes of session 75's sweep (24 scenes, 53 traces, every CPU and GPU mode exact), six
# kept for what no other trace has: frictionloss and equality disabled by flags (their rows never
# appear, switching the equality changes nothing) with parent filtering off and the override
# flag, a tree asleep and woken; speculative contacts and multiccd on thin fast bodies (a sixth
# of the world-steps without rows); a heightfield (several contacts a pair); a chain of 17
# connects and welds, two equalities switched at every recorded step in a fixed pattern of
# worlds (the learned policy's busiest trace); connects on a flex's vertex bodies, switched,
# asleep and woken; trees below jointless bodies, a hinged child of a mocap body welded to a free
# box, limits with margins, asleep, teleported and woken.
rec disable_flags $S/disable_flags/disable_flags.xml --worlds 3 --steps 150 --every 2 \
    --jacobian sparse --sleep --qvel-noise 0.5 --settle 60 --eq 100:0:0:0/1 --eq 220:0:1:0 \
    --wake 200:4:0
rec speculative_ccd $S/speculative_ccd/speculative_ccd.xml --worlds 4 --steps 150 \
    --jacobian sparse --qvel-noise 4
rec hfield_roll $S/hfield_roll/hfield_roll.xml --worlds 4 --steps 150 --every 2 \
    --jacobian sparse --qvel-noise 0.5
toggles=(); for s in $(seq 2 2 298); do
    k=$((s / 2))
    toggles+=(--eq "$s:$((k * 7 % 17)):$((k % 2)):$((k % 4))/$(((k + 1) % 4))")
    toggles+=(--eq "$s:$((k * 3 % 17)):$((k / 2 % 2))")
done
rec connect_chain $S/connect_chain/connect_chain.xml --worlds 4 --steps 150 --every 2 \
    --jacobian sparse "${toggles[@]}"
rec flex_vertex_eq $S/flex_vertex_eq/flex_vertex_eq.xml --worlds 4 --steps 120 --every 2 \
    --jacobian sparse --sleep --settle 80 --eq 100:2:1:0/1 --eq 150:4:0:3 --wake 100:25:2
rec static_parents $S/static_parents/static_parents.xml --worlds 4 --steps 150 --every 2 \
    --jacobian sparse --qvel-noise 0.5 --sleep --settle 60 --eq 50:1:1:0/1 --eq 80:2:1:1/2 \
    --mocap 120:0:0,0.1,-0.05:2/3 --wake 200:5:0 --wake 240:5:3
# Held-out scenes of session 76's sweep (25 scenes, 57 traces, every CPU and GPU mode exact),
# eight kept for what no other trace has (nine traces): condim 1, 3, 4 and 6 with explicit pairs,
# excludes and noslip, asleep and woken; tendons through a pulley wrapping a sphere and a cylinder,
# whose sparse rows keep the wrap objects' trees; cables and sheets with flex-flex contacts, edge
# equalities switched off (a sheet falls apart into particles); 180 trees in a bin, asleep and
# woken; one tree holding every row (one island); body sleep policies with equalities switched; a
# replicate in a frame, gravity compensation and collision bitmasks; zero coefficients that the
# sparse supports keep and the dense drop (other islands under the two Jacobian settings).
rec cones_pairs_noslip_sleep $S/cones_pairs_noslip/cones_pairs_noslip.xml --worlds 4 --steps 150 \
    --every 2 --jacobian dense --sleep --qvel-noise 0.5 --settle 120 --wake 180:2:1/3 --wake 230:5
rec tendon_pulleys $S/tendon_pulleys/tendon_pulleys.xml --worlds 4 --steps 150 --every 2 \
    --jacobian sparse --qvel-noise 0.5
rec flex_cables_cloths $S/flex_cables_cloths/flex_cables_cloths.xml --worlds 3 --steps 120 \
    --every 2 --jacobian dense --eq 100:1:0:1 --eq 160:2:0:2
rec many_trees_sleep $S/many_trees/many_trees.xml --worlds 3 --steps 120 --every 2 \
    --jacobian sparse --sleep --qvel-noise 0.5 --settle 150 --wake 190:3 --wake 220:17
rec single_tree $S/single_tree/single_tree.xml --worlds 4 --steps 150 --every 2 \
    --jacobian sparse --qvel-noise 1.0 --eq 100:1:1:0/1 --eq 200:0:0:2
rec sleep_attrs_eq $S/sleep_attrs_eq/sleep_attrs_eq.xml --worlds 4 --steps 150 --every 2 \
    --jacobian dense --sleep --qvel-noise 0.2 --settle 60 --eq 100:1:1:0/1 --eq 130:2:1 \
    --wake 160:4:2/3 --eq 200:3:1:1/2 --eq 220:0:0:0 --wake 250:1:1
rec frame_replicate_gravcomp $S/frame_replicate_gravcomp/frame_replicate_gravcomp.xml \
    --worlds 4 --steps 150 --every 2 --jacobian sparse --qvel-noise 0.5
for j in dense sparse; do
    rec zero_coefs_$j $S/zero_coefs/zero_coefs.xml --worlds 3 --steps 100 --every 2 \
        --jacobian $j --qvel-noise 0.5 --eq 80:2:1:0/1 --eq 140:0:0:2
done
# Held-out scenes of session 78's sweep (16 scenes, 62 traces, every CPU and GPU mode exact), three
# kept for what no other trace has: rows over more trees than a warp has lanes (a tendon limit
# over 72 trees); more static components a world than a warp has lanes (43); flex self-collision
# of every kind.
rec ring_wide_tendon $S/ring_wide_tendon/ring_wide_tendon.xml --worlds 3 --steps 120 --every 2 \
    --jacobian sparse --eq 60:0:1:0/1 --eq 150:0:0:1 --eq 30:1:1 --eq 50:2:1:2 --eq 90:3:1 \
    --eq 120:4:1 --eq 180:4:0 --eq 200:5:1 --eq 200:6:1:0/2
rec static_components $S/static_components/static_components.xml --worlds 3 --steps 120 \
    --jacobian sparse --eq 40:50:0:0/2 --eq 80:50:1:0/2 --eq 60:20:0:1 --eq 90:5:0 \
    --eq 100:5:1:2 --eq 70:80:0:1/2
rec flex_selfcollide $S/flex_selfcollide/flex_selfcollide.xml --worlds 3 --steps 120 --every 4 \
    --jacobian sparse
