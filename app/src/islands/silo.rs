//! The silo console's forms: the described form every portal page renders its forms with, the
//! portal's row actions and tools (`GET` forms their pages answer), and the access-token form.
//! None draws itself in the browser: [`crate::islands::enhance`] takes each over.

pub mod portal_form;
pub mod portal_tools;
pub mod token_form;
