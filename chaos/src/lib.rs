//! The chaos driver (being written).
