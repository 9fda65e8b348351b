//! The workload on mmalloc (the `mmalloc` crate).
#[global_allocator]
static GLOBAL: mmalloc::MmAlloc = mmalloc::MmAlloc;
fn main() {
    mmalloc_rust_bench::main_with("mmalloc");
}
