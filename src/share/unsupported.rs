//! Where this build has no sharing between processes (Windows: named pipes and NT handles are
//! not built yet): the same names, each failing with a named error.

#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use crate::status::*;

fn unsupported<T>() -> Result<T> {
    Err(Error::new(ErrorKind::Unsupported, "sharing a camera between processes is built for Linux only (not in this build)"))
}

pub(crate) mod publisher {
    use super::super::wire::StatusMsg;
    use crate::frame::Frame;
    use crate::status::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Terms {
        pub quota: u32,
        pub max_consumers: u32,
        pub heartbeat: Duration,
        pub silence: Duration,
    }
    pub(crate) type StatusFn = Box<dyn Fn() -> StatusMsg + Send + Sync>;
    pub(crate) struct Publication;
    impl Publication {
        pub(crate) fn start(_: &str, _: String, _: Terms, _: StatusFn) -> Result<Arc<Publication>> {
            super::unsupported()
        }
        pub(crate) fn name(&self) -> &str {
            ""
        }
        pub(crate) fn terms(&self) -> Terms {
            Terms { quota: 0, max_consumers: 0, heartbeat: Duration::ZERO, silence: Duration::ZERO }
        }
        pub(crate) fn consumers(&self) -> u32 {
            0
        }
        pub(crate) fn announce(&self, _: &Arc<Frame>) {}
        pub(crate) fn stop(&self, _: Duration) {}
    }
}

pub(crate) mod attach {
    use super::super::wire::{FrameMsg, PoolDesc, StatusMsg};
    use crate::pool::{Lease, OsHandle, Pool};
    use crate::status::*;
    use std::sync::Arc;
    use std::time::Duration;

    pub(crate) type DeviceImport = fn(&PoolDesc, OsHandle) -> Result<Arc<Pool>>;
    pub(crate) struct Ticket;
    pub(crate) enum Event {
        Frame(Lease, Ticket, FrameMsg),
        Status(StatusMsg),
        Nothing,
    }
    pub(crate) struct Attached;
    impl Attached {
        pub(crate) fn connect(_: &str, _: Duration, _: Option<DeviceImport>) -> Result<Attached> {
            super::unsupported()
        }
        pub(crate) fn next(&mut self, _: Duration) -> Result<Event> {
            super::unsupported()
        }
        pub(crate) fn publisher_alive(&self) -> bool {
            false
        }
    }
}

pub(crate) mod memory {
    use crate::pool::{Geometry, Pool};
    use crate::status::*;
    use std::sync::Arc;

    pub(crate) fn host_pool(_: Geometry, _: usize) -> Result<Arc<Pool>> {
        super::unsupported()
    }
}
