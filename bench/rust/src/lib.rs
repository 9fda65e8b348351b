//! The workload of the Rust benchmark: what a Rust service or tool does to
//! its allocator, in two phases, with fixed seeds (the checksum depends on
//! the arguments only, not on the allocator or the interleaving).
//!
//! service    `producers` threads build requests (a boxed struct holding a
//!            String, a Vec of Strings, a byte payload of 64 B to 16 KiB and a
//!            HashMap<String, u64>) and send them through a channel to
//!            `workers` threads; each worker parses the request into a
//!            response (a formatted String and a Vec<u64>), keeps the last 256
//!            responses it made in a HashMap (an evicted one is freed by the
//!            worker, a request by the worker that received it: every
//!            request dies on another thread than the one that made it) and
//!            sends every response on to one collector thread, which frees it.
//! transform  a rayon parallel map over 200 000 lines: split into words,
//!            upper-cased into new Strings, joined, hashed; repeated.
//!
//! Each binary in src/bin/ is this workload under one global allocator; it
//! prints one JSON line: the phases' seconds and the checksum.

use std::collections::HashMap;
use std::sync::mpsc;
use std::thread;
use std::time::Instant;

use rayon::prelude::*;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn hash(mut h: u64, x: u64) -> u64 {
    h ^= x.wrapping_add(0x9e37_79b9_7f4a_7c15).wrapping_add(h << 6).wrapping_add(h >> 2);
    h
}

struct Request {
    id: u64,
    name: String,
    tags: Vec<String>,
    payload: Vec<u8>,
    fields: HashMap<String, u64>,
}

struct Response {
    id: u64,
    text: String,
    values: Vec<u64>,
}

fn make_request(id: u64, rng: &mut Rng) -> Box<Request> {
    let name_len = 10 + rng.below(50) as usize;
    let name: String = (0..name_len).map(|k| (b'a' + ((id as usize + k) % 26) as u8) as char).collect();
    let tags = (0..rng.below(9)).map(|k| format!("tag{}-{}", k, id % 97)).collect();
    let size = 64usize << rng.below(9); // 64 B .. 16 KiB
    let payload = (0..size).map(|k| (k as u64 ^ id) as u8).collect();
    let mut fields = HashMap::new();
    for k in 0..(4 + rng.below(13)) {
        fields.insert(format!("field{}", k), id.wrapping_mul(k + 1));
    }
    Box::new(Request { id, name, tags, payload, fields })
}

fn respond(r: &Request) -> Box<Response> {
    let mut values: Vec<u64> = r.fields.values().copied().collect();
    values.sort_unstable();
    values.push(r.payload.iter().map(|&b| b as u64).sum());
    values.extend(r.tags.iter().map(|t| t.len() as u64));
    let text = format!("{}:{}:{}:{}", r.id, r.name, r.tags.join(","), values.len());
    Box::new(Response { id: r.id, text, values })
}

fn response_sum(r: &Response) -> u64 {
    let mut h = hash(r.id, r.text.len() as u64);
    for &v in &r.values {
        h = hash(h, v);
    }
    h
}

/// The service phase: returns the checksum (sum of every response's hash).
pub fn service(producers: usize, workers: usize, requests: u64, seed: u64) -> u64 {
    let (to_collector, collected) = mpsc::channel::<Box<Response>>();
    let collector = thread::spawn(move || collected.into_iter().fold(0u64, |s, r| s.wrapping_add(response_sum(&r))));
    let mut worker_tx = Vec::new();
    let mut worker_handles = Vec::new();
    for _ in 0..workers {
        let (tx, rx) = mpsc::sync_channel::<Box<Request>>(64);
        worker_tx.push(tx);
        let out = to_collector.clone();
        worker_handles.push(thread::spawn(move || {
            let mut recent: HashMap<u64, Box<Response>> = HashMap::new();
            let mut order = std::collections::VecDeque::new();
            for req in rx {
                let resp = respond(&req);
                let keep = Box::new(Response { id: resp.id, text: resp.text.clone(), values: resp.values.clone() });
                recent.insert(keep.id, keep);
                order.push_back(req.id);
                if order.len() > 256 {
                    recent.remove(&order.pop_front().unwrap());
                }
                out.send(resp).unwrap();
            }
        }));
    }
    drop(to_collector);
    let per = requests / producers as u64;
    let producer_handles: Vec<_> = (0..producers)
        .map(|p| {
            let txs = worker_tx.clone();
            thread::spawn(move || {
                let mut rng = Rng(seed ^ (p as u64).wrapping_mul(0x1234_5678_9abc_def1));
                for i in 0..per {
                    let id = p as u64 * per + i;
                    let req = make_request(id, &mut rng);
                    txs[(id % txs.len() as u64) as usize].send(req).unwrap();
                }
            })
        })
        .collect();
    drop(worker_tx);
    for h in producer_handles {
        h.join().unwrap();
    }
    for h in worker_handles {
        h.join().unwrap();
    }
    collector.join().unwrap()
}

/// The transform phase: returns the checksum.
pub fn transform(lines: usize, rounds: usize, seed: u64) -> u64 {
    let mut rng = Rng(seed);
    let words = ["alpha", "beta", "gamma", "delta", "allocator", "thread", "page", "heap", "free", "malloc"];
    let input: Vec<String> = (0..lines)
        .map(|_| {
            let n = 3 + rng.below(12) as usize;
            let mut s = String::new();
            for k in 0..n {
                if k > 0 {
                    s.push(' ');
                }
                s.push_str(words[rng.below(words.len() as u64) as usize]);
            }
            s
        })
        .collect();
    let mut sum = 0u64;
    for round in 0..rounds {
        let out: Vec<String> = input
            .par_iter()
            .map(|line| {
                let tokens: Vec<String> = line.split(' ').map(|w| w.to_uppercase()).collect();
                tokens.join(if round % 2 == 0 { "-" } else { "_" })
            })
            .collect();
        sum = out.iter().fold(sum, |h, s| hash(h, s.len() as u64 ^ s.as_bytes()[0] as u64));
    }
    sum
}

/// Parse `key=value` arguments, run both phases, print one JSON line.
pub fn main_with(allocator: &str) {
    let mut threads = 4usize;
    let mut requests = 200_000u64;
    let mut lines = 200_000usize;
    let mut rounds = 4usize;
    for a in std::env::args().skip(1) {
        let (k, v) = a.split_once('=').unwrap_or_else(|| panic!("argument {} is not key=value", a));
        match k {
            "threads" => threads = v.parse().unwrap(),
            "requests" => requests = v.parse().unwrap(),
            "lines" => lines = v.parse().unwrap(),
            "rounds" => rounds = v.parse().unwrap(),
            _ => panic!("unknown argument {}", k),
        }
    }
    let producers = (threads / 2).max(1);
    let workers = (threads - threads / 2).max(1);
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().unwrap();
    let t0 = Instant::now();
    let s1 = service(producers, workers, requests, 42);
    let t1 = Instant::now();
    let s2 = transform(lines, rounds, 43);
    let t2 = Instant::now();
    println!(
        "{{\"allocator\":\"{}\",\"threads\":{},\"service_s\":{:.4},\"transform_s\":{:.4},\"seconds\":{:.4},\"checksum\":\"{:016x}\"}}",
        allocator,
        threads,
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        (t2 - t0).as_secs_f64(),
        s1 ^ s2.rotate_left(17)
    );
}
