//! The workload on Rust's default allocator (the C library's malloc).
fn main() {
    mmalloc_rust_bench::main_with("system");
}
