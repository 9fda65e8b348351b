//! The workload on jemalloc (the `tikv-jemallocator` crate).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
fn main() {
    mmalloc_rust_bench::main_with("jemalloc");
}
