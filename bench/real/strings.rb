# strings.rb — an interpreter's string churn under its garbage collector: the
# pattern of the suite row "Ruby string stress" (issue: fastest in every
# row), run by Debian's ruby on whatever malloc is preloaded.
#
# Work: CHUNKS chunks of ITER iterations each, dealt round the threads
# (chunk c to thread c % threads).  An iteration makes a string of 0-40
# bytes from pieces (Ruby keeps strings of up to 23 bytes inside the object
# and mallocs the longer ones), and stores it into a random place of the
# chunk's share of a retained set that grows to RETAINED strings in all
# (what it replaces becomes garbage); every 300 iterations a 100 KB string
# is built by appends (realloc growth) and dropped.  The GC runs as Ruby
# decides.
#
# Output: one JSON line, like the suite's workloads: the time of the
# threaded phase, strings made (ops), and a checksum (CRC-32 of the
# retained set in order, with its total length) that does not depend on
# the thread count or the allocator.
#
# usage: ruby strings.rb [threads=N] [iterations=N] [retained=N] [seed=N]
require "zlib"

opts = {"threads" => 1, "iterations" => 2_000_000, "retained" => 600_000, "seed" => 42}
ARGV.each do |a|
  k, v = a.split("=", 2)
  abort "strings.rb: unknown argument #{a}" unless opts.key?(k) && v =~ /\A\d+\z/
  opts[k] = v.to_i
end
threads = [opts["threads"], 1].max
CHUNKS = 64
per_chunk = opts["iterations"] / CHUNKS
share = opts["retained"] / CHUNKS
retained = Array.new(share * CHUNKS)
PIECES = %w[a bc def ghij klmno pqrstu vwxyz01 23456789 ABCDEFGHIJ KLMNOPQRSTUV].freeze

work = lambda do |c|
  rng = Random.new(opts["seed"] * 1000 + c)
  base = c * share
  made = 0
  per_chunk.times do |i|
    len = rng.rand(41)
    s = +""
    while s.bytesize < len
      s << PIECES[rng.rand(PIECES.size)]
    end
    s = s.byteslice(0, len)
    retained[base + rng.rand(share)] = s
    made += 1
    next unless (i % 300).zero?
    big = +""
    big << PIECES[rng.rand(PIECES.size)] * 64 while big.bytesize < 100_000
    made += 1
  end
  made
end

t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
counts = Array.new(threads) do |t|
  Thread.new { (t...CHUNKS).step(threads).sum { |c| work.call(c) } }
end.map(&:value)
seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0

crc = 0
bytes = 0
retained.each do |s|
  next unless s
  crc = Zlib.crc32(s, crc)
  bytes += s.bytesize
end
printf("{\"workload\":\"ruby\",\"threads\":%d,\"ops\":%d,\"seconds\":%.6f,\"checksum\":\"%08x-%d\"," \
       "\"gc_runs\":%d}\n", threads, counts.sum, seconds, crc, bytes, GC.count)
