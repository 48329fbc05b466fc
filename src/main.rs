pub mod filter;
pub mod hash;
fn main() {}
