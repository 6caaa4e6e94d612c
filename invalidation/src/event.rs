//! What users report: the events that can change a world's static incidence.

/// The source of a static row or rowless hyperedge, as MuJoCo names it: the equality of an
/// equality row, the dof of a dof friction-loss row, the tendon of a tendon friction-loss row,
/// the flex of a rowless stiffness coupling, and under the discrete integrator the tendon or
/// actuator whose stiffness, damping, gain or bias couples trees without rows. (A passive flex
/// contact couples without rows too, but it changes as contacts do: no edit reports it, and the
/// guard notices it.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceId {
    /// Equality constraint id (`eq` in MuJoCo).
    Eq(i32),
    /// Dof id of a dof friction-loss row.
    Dof(i32),
    /// Tendon id of a tendon friction-loss row.
    Tendon(i32),
    /// Flex id of a rowless stiffness coupling.
    Flex(i32),
    /// Tendon id of a rowless coupling by the tendon's stiffness or damping.
    TendonCoupling(i32),
    /// Actuator id of a rowless coupling by the actuator's gain, bias, damping or armature.
    ActuatorCoupling(i32),
}

impl SourceId {
    /// The id within its kind (MuJoCo's ids count from 0).
    pub fn id(self) -> i32 {
        match self {
            SourceId::Eq(id)
            | SourceId::Dof(id)
            | SourceId::Tendon(id)
            | SourceId::Flex(id)
            | SourceId::TendonCoupling(id)
            | SourceId::ActuatorCoupling(id) => id,
        }
    }
}

impl std::fmt::Display for SourceId {
    /// As MuJoCo names it: `equality 3`, `dof 0`, `tendon 2`, `flex 1`, `tendon 2's coupling`,
    /// `actuator 5's coupling`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            SourceId::Eq(id) => write!(f, "equality {id}"),
            SourceId::Dof(id) => write!(f, "dof {id}"),
            SourceId::Tendon(id) => write!(f, "tendon {id}"),
            SourceId::Flex(id) => write!(f, "flex {id}"),
            SourceId::TendonCoupling(id) => write!(f, "tendon {id}'s coupling"),
            SourceId::ActuatorCoupling(id) => write!(f, "actuator {id}'s coupling"),
        }
    }
}

/// An edit to a static constraint of the model (or of one world's copy of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Edit {
    /// An equality was added.
    EqAdded {
        /// Equality id.
        eq: i32,
    },
    /// An equality was removed.
    EqRemoved {
        /// Equality id.
        eq: i32,
    },
    /// An equality now couples other bodies.
    EqRetargeted {
        /// Equality id.
        eq: i32,
    },
    /// Dof friction loss switched on or off.
    DofFriction {
        /// Dof id.
        dof: i32,
        /// Switched on.
        on: bool,
    },
    /// Tendon friction loss switched on or off.
    TendonFriction {
        /// Tendon id.
        tendon: i32,
        /// Switched on.
        on: bool,
    },
    /// Flex stiffness changed (the coupling appears or vanishes).
    FlexStiffness {
        /// Flex id.
        flex: i32,
    },
    /// Flex rigidity changed (its vertex trees change).
    FlexRigidity {
        /// Flex id.
        flex: i32,
    },
    /// A tendon's rowless coupling appeared, vanished or changed trees (its stiffness or damping
    /// switched on or off, the integrator or solver changed, or its path now spans other trees).
    TendonCoupling {
        /// Tendon id.
        tendon: i32,
    },
    /// An actuator's rowless coupling appeared, vanished or changed trees (its gain, bias,
    /// damping or armature switched, or its transmission retargeted).
    ActuatorCoupling {
        /// Actuator id.
        actuator: i32,
    },
}

impl Edit {
    /// The static source the edit touches.
    pub fn source(&self) -> SourceId {
        match *self {
            Edit::EqAdded { eq } | Edit::EqRemoved { eq } | Edit::EqRetargeted { eq } => {
                SourceId::Eq(eq)
            }
            Edit::DofFriction { dof, .. } => SourceId::Dof(dof),
            Edit::TendonFriction { tendon, .. } => SourceId::Tendon(tendon),
            Edit::FlexStiffness { flex } | Edit::FlexRigidity { flex } => SourceId::Flex(flex),
            Edit::TendonCoupling { tendon } => SourceId::TendonCoupling(tendon),
            Edit::ActuatorCoupling { actuator } => SourceId::ActuatorCoupling(actuator),
        }
    }
}

/// One reported change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// `eq_active` of one equality changed in one world.
    EqActive {
        /// World.
        world: u32,
        /// Equality id.
        eq: i32,
        /// New value.
        active: bool,
    },
    /// A tree fell asleep (its rows vanish).
    Sleep {
        /// World.
        world: u32,
        /// Tree id.
        tree: i32,
    },
    /// A tree woke up (its rows come back).
    Wake {
        /// World.
        world: u32,
        /// Tree id.
        tree: i32,
    },
    /// A static constraint was edited in one world (`Some`) or in the model, every world (`None`).
    Edit {
        /// World, or `None` for all.
        world: Option<u32>,
        /// What changed.
        edit: Edit,
    },
    /// The capacities changed: nothing cached survives.
    Capacity,
}

impl Event {
    /// The source an equality switch or an edit names; none for sleep, wake and capacity.
    ///
    /// ```
    /// use invalidation::{Edit, Event, SourceId};
    /// let e = Event::EqActive { world: 0, eq: 3, active: false };
    /// assert_eq!(e.source(), Some(SourceId::Eq(3)));
    /// assert_eq!(Event::Capacity.source(), None);
    /// ```
    pub fn source(&self) -> Option<SourceId> {
        match *self {
            Event::EqActive { eq, .. } => Some(SourceId::Eq(eq)),
            Event::Edit { edit, .. } => Some(edit.source()),
            Event::Sleep { .. } | Event::Wake { .. } | Event::Capacity => None,
        }
    }

    /// This event as world `to` reports it, where it happened in world `from` (a copy of a world,
    /// as a bench or a test tiles recorded worlds): `None` for another world's event and for the
    /// events of every world, which a caller reports once.
    ///
    /// ```
    /// use invalidation::Event;
    /// let e = Event::Sleep { world: 1, tree: 4 };
    /// assert_eq!(e.moved(1, 7), Some(Event::Sleep { world: 7, tree: 4 }));
    /// assert_eq!(e.moved(0, 7), None);
    /// assert_eq!(Event::Capacity.moved(0, 0), None);
    /// ```
    pub fn moved(&self, from: u32, to: u32) -> Option<Event> {
        let here = |world: u32| (world == from).then_some(to);
        Some(match *self {
            Event::EqActive { world, eq, active } => Event::EqActive {
                world: here(world)?,
                eq,
                active,
            },
            Event::Sleep { world, tree } => Event::Sleep {
                world: here(world)?,
                tree,
            },
            Event::Wake { world, tree } => Event::Wake {
                world: here(world)?,
                tree,
            },
            Event::Edit {
                world: Some(world),
                edit,
            } => Event::Edit {
                world: Some(here(world)?),
                edit,
            },
            Event::Edit { world: None, .. } | Event::Capacity => return None,
        })
    }
}

/// The events of one step, in the order they happened. Reuse one value across steps
/// ([`Events::clear`]) so reporting allocates nothing once warm.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Events {
    list: Vec<Event>,
    /// Kept as events are pushed, so that a tracker checks a step's events without a pass over
    /// them where they all fall inside its worlds and trees.
    bounds: Bounds,
}

/// What a step's events name: one past the largest world, the smallest and largest tree of a
/// sleep or wake (none: `i32::MAX`, `i32::MIN`), the smallest id of an equality switched or a
/// source edited (none: `i32::MAX`), and how many report an `eq_active` change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bounds {
    worlds: u64,
    tree_min: i32,
    tree_max: i32,
    id_min: i32,
    eq_active: usize,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            worlds: 0,
            tree_min: i32::MAX,
            tree_max: i32::MIN,
            id_min: i32::MAX,
            eq_active: 0,
        }
    }
}

impl Bounds {
    fn take(&mut self, e: &Event) {
        if let Some(source) = e.source() {
            self.id_min = self.id_min.min(source.id());
        }
        let world = match *e {
            Event::EqActive { world, .. } => {
                self.eq_active += 1;
                Some(world)
            }
            Event::Sleep { world, tree } | Event::Wake { world, tree } => {
                self.tree_min = self.tree_min.min(tree);
                self.tree_max = self.tree_max.max(tree);
                Some(world)
            }
            Event::Edit { world, .. } => world,
            Event::Capacity => None,
        };
        if let Some(w) = world {
            self.worlds = self.worlds.max(u64::from(w) + 1);
        }
    }
}

impl Events {
    /// No events.
    pub fn new() -> Events {
        Events::default()
    }

    /// Appends an event.
    pub fn push(&mut self, event: Event) -> &mut Self {
        self.bounds.take(&event);
        self.list.push(event);
        self
    }

    /// Reports an `eq_active` change.
    pub fn eq_active(&mut self, world: u32, eq: i32, active: bool) -> &mut Self {
        self.push(Event::EqActive { world, eq, active })
    }

    /// Reports that `tree` fell asleep in `world`.
    pub fn sleep(&mut self, world: u32, tree: i32) -> &mut Self {
        self.push(Event::Sleep { world, tree })
    }

    /// Reports that `tree` woke up in `world`. Like a sleep event it is optional (the quotient
    /// finds sleeping components from the rows), but a world whose trees are then all reported
    /// awake is replayed by the GPU quotient's plain kernels at this step rather than the next.
    pub fn wake(&mut self, world: u32, tree: i32) -> &mut Self {
        self.push(Event::Wake { world, tree })
    }

    /// Reports a static edit in one world (`Some`) or all (`None`).
    pub fn edit(&mut self, world: Option<u32>, edit: Edit) -> &mut Self {
        self.push(Event::Edit { world, edit })
    }

    /// Reports a capacity change (every world is rebuilt).
    pub fn capacity_changed(&mut self) -> &mut Self {
        self.push(Event::Capacity)
    }

    /// Forgets every event, keeping the allocation.
    pub fn clear(&mut self) {
        self.list.clear();
        self.bounds = Bounds::default();
    }

    /// The events in order.
    pub fn as_slice(&self) -> &[Event] {
        &self.list
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// No events.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// How many events report an `eq_active` change.
    pub fn eq_active_count(&self) -> usize {
        self.bounds.eq_active
    }

    /// Whether every event names a world below `nworld`, every sleep or wake a tree of
    /// `0..ntree` and every equality or edited source an id of 0 or more, so that none is out of
    /// a tracker of that size.
    pub(crate) fn within(&self, nworld: usize, ntree: usize) -> bool {
        let b = &self.bounds;
        let no_trees = b.tree_min > b.tree_max;
        let trees = no_trees || (b.tree_min >= 0 && (b.tree_max as usize) < ntree);
        b.worlds <= nworld as u64 && trees && b.id_min >= 0
    }
}
