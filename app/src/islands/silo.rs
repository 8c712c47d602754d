//! The silo console's islands: the described form every portal page renders its forms with, the
//! portal's row actions and tools, and the access-token form.

pub mod portal_form;
pub mod portal_tools;
pub mod token_form;
