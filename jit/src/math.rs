//! placeholder until the math prelude lands
pub(crate) fn prelude() -> &'static str {
    ""
}
