//! Values derived from a loaded experiment, computed once and shared by every analysis that asks
//! (the paired drops each analysis starts from, for one). `io` stores them without knowing their
//! types: each is keyed by its Rust type and a number the caller chooses.
//!
//! An experiment's tables are not changed after it is loaded, so a derived value stays right. A
//! clone of an experiment starts with none.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

type Cell = Arc<OnceLock<Arc<dyn Any + Send + Sync>>>;

/// The derived values of one experiment.
#[derive(Default)]
pub struct Derived {
    cells: Mutex<HashMap<(TypeId, u64), Cell>>,
}

impl Derived {
    /// The value of type `T` under `key`, computed by `make` the first time it is asked for (a
    /// second caller meanwhile waits for it rather than computing it again).
    pub fn get_or_init<T: Any + Send + Sync>(&self, key: u64, make: impl FnOnce() -> T) -> Arc<T> {
        let cell: Cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|e| e.into_inner());
            cells.entry((TypeId::of::<T>(), key)).or_default().clone()
        };
        let value = cell.get_or_init(|| Arc::new(make()) as Arc<dyn Any + Send + Sync>);
        // The cell was made for `T` (its key holds T's TypeId), so the downcast holds.
        Arc::clone(value)
            .downcast::<T>()
            .unwrap_or_else(|_| unreachable!("a derived value is stored under its own type"))
    }
}

impl Clone for Derived {
    /// A clone of an experiment computes its own derived values.
    fn clone(&self) -> Derived {
        Derived::default()
    }
}

impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.cells.lock().map_or(0, |c| c.len());
        write!(f, "Derived({n} values)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_made_once_per_type_and_key() {
        let d = Derived::default();
        let mut made = 0;
        let a = d.get_or_init(1, || {
            made += 1;
            vec![1, 2]
        });
        let b = d.get_or_init(1, || -> Vec<i32> { unreachable!("made once") });
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(made, 1);
        assert_eq!(*d.get_or_init(2, || vec![3]), vec![3], "another key");
        assert_eq!(*d.get_or_init(1, || "text"), "text", "another type");
        assert_eq!(format!("{:?}", d.clone()), "Derived(0 values)");
    }
}
