//! What users report: the events that can change a world's static incidence.

/// The source of a static row or rowless hyperedge, as MuJoCo names it: the equality of an
/// equality row, the dof of a dof friction-loss row, the tendon of a tendon friction-loss row,
/// the flex of a rowless stiffness coupling.
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
}

impl Events {
    /// No events.
    pub fn new() -> Events {
        Events::default()
    }

    /// Appends an event.
    pub fn push(&mut self, event: Event) -> &mut Self {
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

    /// Reports a capacity change.
    pub fn capacity(&mut self) -> &mut Self {
        self.push(Event::Capacity)
    }

    /// Forgets every event, keeping the allocation.
    pub fn clear(&mut self) {
        self.list.clear();
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
}
