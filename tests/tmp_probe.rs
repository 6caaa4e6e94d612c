use archipelago::quotient::{Policy, Quotient};
use archipelago::trace::Trace;
use archipelago::{Batch, Input, Islands};
use invalidation::Events;
#[test]
fn probe() {
    for name in [
        "closed_loops",
        "flex_mix",
        "multi_tree_tendons",
        "sleep_toggles",
        "hammock",
    ] {
        let t = Trace::open(format!("traces/{name}.npz")).unwrap();
        for report in [true, false] {
            let mut q = Quotient::new(&t.capacity(), Policy::default());
            q.set_reuse(false);
            let (mut b, mut out, mut ev) = (Batch::default(), Islands::default(), Events::new());
            let mut masked_steps = Vec::new();
            for s in 0..t.nstep() {
                t.batch(s, &mut b);
                if report {
                    t.events(s, &mut ev);
                } else {
                    ev.clear();
                }
                let before = q.counters().masked;
                q.step(&Input::new(t.model(), &b).unwrap(), &ev, &mut out)
                    .unwrap();
                if q.counters().masked > before {
                    masked_steps.push(s);
                }
            }
            println!("{name} report={report} {:?}", q.counters());
            println!(
                "  masked at steps {:?}",
                &masked_steps[..masked_steps.len().min(40)]
            );
        }
    }
}
