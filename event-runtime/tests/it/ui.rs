//! Compile-fail tests of every diagnostic the macros give (trybuild): tests/ui/*.rs with the
//! expected compiler output in tests/ui/*.stderr. Refresh with `TRYBUILD=overwrite` and read
//! every changed .stderr before committing it.

#[test]
fn diagnostics() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui-pass/*.rs");
}
