//! The workload on mimalloc (the `mimalloc` crate).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
fn main() {
    mmalloc_rust_bench::main_with("mimalloc");
}
