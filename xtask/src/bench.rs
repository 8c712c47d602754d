pub fn run(_a: &[String]) -> crate::Result {
    Err("not yet".into())
}
