//! The component kit both roles share: the shell (sidebar, header), tables, forms and feedback.
//! Pages compose these; nothing here knows a role's data.

pub mod feedback;
pub mod form;
pub mod format;
pub mod layout;
pub mod table;
