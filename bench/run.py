#!/usr/bin/env python3
"""make bench: every workload on every allocator, and a report.

Runs workload x allocator x thread count, N repetitions, the allocators
alternating inside each repetition (the order rotates from one repetition
to the next, so slow drift of a noisy machine spreads over all of them).
Each run is one child process, the allocator brought in by LD_PRELOAD; from
os.wait4's rusage it records wall, user and system time, peak RSS and page
faults, and from the workload's JSON line its own time, operations and
checksum.  A run that fails, crashes, times out or prints a checksum other
than the one every other allocator agrees on is recorded as such, never
dropped.  Output in bench/results/<date>-<host>/: results.csv,
environment.txt, report.md and PNG plots (bench/report.py).

  python3 bench/run.py            quick default (make bench)
  python3 bench/run.py --full     the whole matrix (make bench FULL=1)
  python3 bench/run.py --help     every option

Standard library only; matplotlib for the plots (skipped, and said so, when
it is missing).

main() reads top to bottom: plan (the Jobs), allocator discovery
(allocators.py), bwa's inputs, environment.txt, run_matrix (run_one per run:
run_workload, or run_bwa for the real program), settle_checksums, the
callgrind counts, then report.write.
"""

import argparse
import csv
import datetime
import json
import os
import platform
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import allocators  # noqa: E402
import bwa_data  # noqa: E402
import callgrind  # noqa: E402
import report  # noqa: E402
import suite  # noqa: E402

CSV_FIELDS = ["workload", "allocator", "threads", "rep", "order", "status", "exit_code",
              "signal", "seconds", "wall_s", "user_s", "sys_s", "maxrss_kb", "minflt", "majflt",
              "nvcsw", "nivcsw", "ops", "ops_per_sec", "checksum", "checksum_ok", "args",
              "started", "detail"] + ["mm_" + k for k in report.SCALING_COUNTERS]


def log(msg):
    """A progress or warning line on stderr."""
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


# --------------------------------------------------------------------------
# one child
# --------------------------------------------------------------------------

def gnu_time():
    """Path of GNU time, or None.

    Peak RSS must be measured from a small parent: Linux carries the forking
    process's RSS high-water mark over fork and exec into the child's
    ru_maxrss, so a child forked by this Python process would report at
    least Python's ~20 MiB.  GNU time forks the workload from its own tiny
    image and reports the child's own peak RSS and faults.
    """
    for p in ("/usr/bin/time", "/bin/time"):
        if os.path.exists(p):
            try:
                r = subprocess.run([p, "--version"], capture_output=True, text=True, timeout=10)
                if "GNU" in r.stdout + r.stderr:
                    return p
            except (OSError, subprocess.SubprocessError):
                pass
    return None


GNU_TIME = gnu_time()
TIME_FORMAT = "MMBENCH %M %R %F"


def run_child(cmd, env, timeout, stdout_path=None):
    """Runs cmd; returns a dict of measurements. Never raises on child failure.

    Wall time is measured here; user and system time and context switches
    come from os.wait4's rusage (the launcher's share is negligible); peak
    RSS and page faults from GNU time, i.e. from the workload alone.
    """
    out_f = open(stdout_path, "wb") if stdout_path else tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()
    tfd, tpath = tempfile.mkstemp(prefix="mm-bench-time-")
    os.close(tfd)
    full = ([GNU_TIME, "-f", TIME_FORMAT, "-o", tpath] if GNU_TIME else []) + list(cmd)
    timed_out = threading.Event()
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(full, env=env, stdout=out_f, stderr=err_f,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        out_f.close()
        err_f.close()
        os.unlink(tpath)
        return {"status": "error", "detail": "cannot start: %s" % e}

    def kill():
        timed_out.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    wall = time.monotonic() - t0
    proc.returncode = status  # reaped by wait4: keeps Popen from waiting again
    stdout = b""
    if not stdout_path:
        out_f.seek(0)
        stdout = out_f.read()
    out_f.close()
    err_f.seek(0)
    stderr = err_f.read().decode(errors="replace")
    err_f.close()
    with open(tpath) as f:
        tlines = f.read().splitlines()
    os.unlink(tpath)
    r = {"wall_s": wall, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
         "maxrss_kb": ru.ru_maxrss, "minflt": ru.ru_minflt, "majflt": ru.ru_majflt,
         "nvcsw": ru.ru_nvcsw, "nivcsw": ru.ru_nivcsw, "stdout": stdout.decode(errors="replace"),
         "stderr": stderr, "exit_code": "", "signal": ""}
    child_sig = None
    for line in tlines:
        if line.startswith("MMBENCH "):
            m, rf, ff = line.split()[1:4]
            r["maxrss_kb"], r["minflt"], r["majflt"] = int(m), int(rf), int(ff)
        elif line.startswith("Command terminated by signal"):
            child_sig = int(line.split()[-1])
    if timed_out.is_set():
        r["status"] = "timeout"
        r["detail"] = "killed after %gs" % timeout
    elif os.WIFSIGNALED(status) or child_sig is not None:
        sig = child_sig if child_sig is not None else os.WTERMSIG(status)
        try:
            r["signal"] = signal.Signals(sig).name
        except ValueError:
            r["signal"] = str(sig)
        r["status"] = "crash"
        r["detail"] = "killed by %s" % r["signal"]
    else:
        code = os.WEXITSTATUS(status)
        r["exit_code"] = code
        r["status"] = "ok" if code == 0 else "fail"
        if code == 3:
            r["detail"] = "workload caught corrupted memory"
        elif code != 0:
            r["detail"] = "exit status %d" % code
    if r["status"] != "ok":
        tail = [l for l in stderr.strip().splitlines() if l.strip()][-2:]
        if tail:
            r["detail"] = (r.get("detail", "") + ": " + " / ".join(tail))[:300]
    return r


def parse_json_line(text):
    """The last JSON object line of a workload's stdout, None when there is none or it is bad."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


# --------------------------------------------------------------------------
# planning
# --------------------------------------------------------------------------

class Job:
    """One workload at one thread count: what each repetition runs on every allocator."""

    def __init__(self, workload, threads, cmd_args, kind="workload"):
        self.workload = workload
        self.threads = threads
        self.args = cmd_args
        self.kind = kind


def find_build(build_dir, log_fn):
    """The directory holding the workload binaries (builds them if needed)."""
    need = [os.path.join(build_dir, "bench", w) for w in suite.WORKLOADS]
    if all(os.path.exists(p) for p in need):
        return build_dir
    alt = os.path.join(REPO, "build-bench")
    log_fn("workload binaries not found in %s/bench; building them in %s "
           "(allocator not built there)" % (build_dir, alt))
    subprocess.run(["cmake", "-S", REPO, "-B", alt, "-DCMAKE_BUILD_TYPE=Release",
                    "-DMM_BUILD_LIB=OFF", "-DMM_BUILD_STREAM=OFF"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", alt, "-j", str(os.cpu_count() or 2)], check=True,
                   stdout=subprocess.DEVNULL)
    return alt


def plan(args):
    """The mode, the thread counts and the list of Jobs the options ask for."""
    mode = "tiny" if args.tiny else "full" if args.full else "quick"
    threads = args.threads or (suite.THREADS_FULL if mode == "full" else suite.THREADS_QUICK)
    if mode == "tiny" and not args.threads:
        threads = [1, 2]
    names = args.workloads or suite.default_names(mode)
    unknown = [n for n in names if n not in suite.all_names()]
    if unknown:
        raise SystemExit("unknown workload(s): %s (known: %s)"
                         % (", ".join(unknown), ", ".join(suite.all_names())))
    jobs = []
    for name in names:
        if name == "bwa":
            bt = [t for t in suite.BWA_THREADS if not args.threads or t in args.threads]
            for t in bt or suite.BWA_THREADS[:1]:
                jobs.append(Job("bwa", t, [], kind="bwa"))
            continue
        if name in suite.REAL:
            real = suite.REAL[name]
            rt = [t for t in real["threads"] if not args.threads or t in args.threads]
            for t in rt or real["threads"][:1]:
                jobs.append(Job(name, t, real["args"][mode].split(), kind="real"))
            continue
        for t in threads:
            jobs.append(Job(name, t, suite.args_for(name, mode)))
    return mode, threads, jobs


def fill_defaults(args, mode):
    """The mode's repetitions and per-run timeout (into args.timeout) where not given."""
    reps = args.reps or (suite.REPS_FULL if mode == "full" else
                         2 if mode == "tiny" else suite.REPS_QUICK)
    if args.timeout is None:
        args.timeout = 900.0 if mode == "full" else 120.0
    return reps


def output_dir(args):
    """The results directory, made if needed: --out, else bench/results/<date>-<host>."""
    host = socket.gethostname().split(".")[0]
    out = args.out or os.path.join(HERE, "results", "%s-%s" % (
        datetime.datetime.now().strftime("%Y-%m-%d-%H%M"), host))
    os.makedirs(out, exist_ok=True)
    return out


def drop_missing_real(jobs, notes):
    """The real programs' jobs, without those whose tools this machine lacks (with a note)."""
    keep = []
    for j in jobs:
        if j.kind == "real":
            lacking = [t for t in suite.REAL[j.workload]["tools"] if not shutil.which(t)]
            if lacking:
                msg = "%s skipped: %s not installed (apt-get install %s)" % (
                    j.workload, " ".join(lacking), suite.REAL[j.workload]["packages"])
                if msg not in notes:
                    notes.append(msg)
                    log(msg)
                continue
        keep.append(j)
    return keep


def prepare_bwa(jobs, mode, notes):
    """bwa's inputs, made once and cached; or bwa's jobs dropped, with a note, without tools."""
    if not any(j.kind == "bwa" for j in jobs):
        return jobs, None
    lacking = bwa_data.tools_missing()
    if lacking:
        notes.append("bwa skipped: %s not installed (apt-get install bwa dwgsim)"
                     % " ".join(lacking))
        log(notes[-1])
        return [j for j in jobs if j.kind != "bwa"], None
    p = suite.BWA[mode]
    bwa_inputs = bwa_data.prepare(os.path.join(HERE, "data"), p["genome_bp"], p["pairs"], log)
    notes.append("bwa input: %.1f Mbp synthetic genome, %d read pairs of %d bp (dwgsim -z %d)"
                 % (p["genome_bp"] / 1e6, p["pairs"], bwa_data.READ_LEN, bwa_data.DWGSIM_SEED))
    return jobs, bwa_inputs


# --------------------------------------------------------------------------
# environment
# --------------------------------------------------------------------------

def sh(cmd):
    """A shell command's stripped stdout; '' when it cannot run."""
    try:
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30)
        return r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def environment(allocs, missing, notes, mode, threads, reps, jobs, build, args):
    """environment.txt as first written: the machine, then what this run measures."""
    return "\n".join(machine_lines(build) + [""] +
                     run_lines(allocs, missing, notes, mode, threads, reps, jobs, args)) + "\n"


def machine_lines(build):
    """The machine, its software, the commit and the build: environment.txt's first part."""
    lines = []
    add = lines.append
    add("date: %s" % datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
    add("host: %s" % socket.gethostname())
    model = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
    add("cpu: %s" % (model or platform.processor() or platform.machine()))
    add("cores (online): %s" % (os.cpu_count() or "?"))
    add("lscpu: %s" % "; ".join(l.strip() for l in sh("lscpu").splitlines()
                                if l.split(":")[0].strip() in ("Thread(s) per core",
                                                               "Core(s) per socket",
                                                               "Socket(s)", "NUMA node(s)",
                                                               "L2 cache", "L3 cache")))
    add("memory: %s" % sh("grep MemTotal /proc/meminfo | awk '{print $2 \" kB\"}'"))
    add("kernel: %s" % " ".join(platform.uname()[0:3]))
    add("transparent hugepages: %s" % sh("cat /sys/kernel/mm/transparent_hugepage/enabled"))
    add("glibc: %s" % (sh("ldd --version | head -1") or platform.libc_ver()[1]))
    add("compiler: %s" % sh("gcc --version | head -1"))
    add("cmake: %s" % sh("cmake --version | head -1"))
    add("python: %s" % sys.version.split()[0])
    add("valgrind: %s" % sh("valgrind --version"))
    add("peak RSS measured by: %s" % ("GNU time (the workload alone)" if GNU_TIME else
                                      "wait4 of a child of the harness: includes ~20 MiB "
                                      "inherited from Python (install GNU time)"))
    add("bwa: %s" % sh("bwa 2>&1 | grep Version"))
    add("commit: %s%s" % (sh("git -C %s rev-parse HEAD" % REPO),
                          " (with uncommitted changes)" if sh(
                              "git -C %s status --porcelain --untracked-files=no" % REPO)
                          else ""))
    add("build directory: %s" % build)
    add("load average at start: %s" % sh("cat /proc/loadavg"))
    return lines


def run_lines(allocs, missing, notes, mode, threads, reps, jobs, args):
    """What this run measures, allocators and notes: environment.txt's second part."""
    lines = ["mode: %s; threads: %s; repetitions: %d; per-run timeout: %gs"
             % (mode, " ".join(map(str, threads)), reps, args.timeout),
             "workloads: %s" % " ".join(sorted({j.workload for j in jobs}, key=lambda w: [
                 j.workload for j in jobs].index(w))),
             "", "allocators:"]
    for a in allocs:
        env = " ".join("%s=%s" % kv for kv in sorted(a.extra_env.items()))
        lines.append("  %-10s %-55s %s%s" % (a.name, a.path or "(no LD_PRELOAD)", a.version,
                                             "  env: " + env if env else ""))
    for name, pkg, why in missing:
        lines.append("  %-10s MISSING: %s" % (name, why))
    for n in notes:
        lines.append("note: %s" % n)
    return lines


def write_environment(out, env_text):
    """Writes environment.txt as known before the runs."""
    with open(os.path.join(out, "environment.txt"), "w") as f:
        f.write(env_text)


def finish_environment(out, t_start):
    """Appends the load average at the end and the total time to environment.txt."""
    with open(os.path.join(out, "environment.txt"), "a") as f:
        f.write("load average at end: %s\n" % sh("cat /proc/loadavg"))
        f.write("total time: %.0f s\n" % (time.monotonic() - t_start))


# --------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------

def write_csv(path, rows):
    """Writes results.csv atomically (rewritten after every run, so a crash loses nothing)."""
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    os.replace(tmp, path)


class AdaptiveTimeout:
    """The per-run limit, so that a hang does not eat the budget.

    Once some allocator has done a job, the limit is 20x its slowest ok wall
    time (at least 15 s, at most --timeout); after MAX_TIMEOUTS timeouts on
    a workload an allocator's further runs of it are recorded as skipped.
    """

    MAX_TIMEOUTS = 2

    def __init__(self, timeout):
        self.timeout = timeout
        self.slowest = {}     # (workload, threads) -> slowest ok wall time
        self.timeouts = {}    # (workload, allocator) -> runs timed out

    def limit(self, job):
        """The timeout for the next run of job."""
        seen = self.slowest.get((job.workload, job.threads))
        return min(self.timeout, max(15.0, 20 * seen)) if seen else self.timeout

    def gave_up(self, job, alloc):
        """Whether alloc timed out on job's workload too often to run it again."""
        return self.timeouts.get((job.workload, alloc.name), 0) >= self.MAX_TIMEOUTS

    def record(self, job, alloc, row):
        """Learns from a finished run: a timeout counts, an ok wall time raises the limit."""
        if row["status"] == "timeout":
            key = (job.workload, alloc.name)
            self.timeouts[key] = self.timeouts.get(key, 0) + 1
        elif row["status"] == "ok":
            key = (job.workload, job.threads)
            self.slowest[key] = max(self.slowest.get(key, 0), float(row["wall_s"]))


def allocator_order(allocs, rep, shuffle):
    """The allocators' order in repetition rep: rotated, then the tail shuffled."""
    # rotating makes every allocator go first once; shuffling the tail with a
    # fixed seed keeps any allocator from always following the same one
    k = rep % len(allocs)
    order = allocs[k:] + allocs[:k]
    tail = order[1:]
    shuffle.shuffle(tail)
    return order[:1] + tail


def run_matrix(jobs, reps, allocs, bindir, bwa_inputs, args, csv_path, t_start):
    """Every job x repetition x allocator, results.csv rewritten after each; Ctrl-C stops early."""
    base_env = dict(os.environ, LC_ALL="C")
    rows = []
    total = len(jobs) * reps * len(allocs)
    shuffle = random.Random(args.seed)
    pacer = AdaptiveTimeout(args.timeout)
    sam_tmp = tempfile.mkdtemp(prefix="mm-bench-sam-")
    try:
        for job in jobs:
            for rep in range(reps):
                for pos, alloc in enumerate(allocator_order(allocs, rep, shuffle)):
                    limit = pacer.limit(job)
                    if pacer.gave_up(job, alloc):
                        row = skipped_row(job, alloc, rep, pos, "not run: %d earlier runs of "
                                          "this workload on %s timed out"
                                          % (pacer.MAX_TIMEOUTS, alloc.name))
                    else:
                        row = run_one(job, alloc, rep, pos, bindir, base_env, limit,
                                      bwa_inputs, sam_tmp)
                    pacer.record(job, alloc, row)
                    rows.append(row)
                    write_csv(csv_path, rows)
                    log_progress(len(rows), total, job, alloc, rep, reps, row, t_start)
    except KeyboardInterrupt:
        log("interrupted: writing the report of the runs done so far")
    finally:
        shutil.rmtree(sam_tmp, ignore_errors=True)
    return rows


def log_progress(n, total, job, alloc, rep, reps, row, t_start):
    """The progress line of run n of total on stderr."""
    el = time.monotonic() - t_start
    log("[%4d/%d] %-13s %-10s T=%-3d rep %d/%d  %6.2fs  %-8s elapsed %dm%02ds%s"
        % (n, total, job.workload, alloc.name, job.threads, rep + 1, reps,
           float(row["seconds"] or row["wall_s"] or 0), row["status"],
           el // 60, el % 60,
           ("  " + row["detail"][:80]) if row["status"] != "ok" else ""))


def skipped_row(job, alloc, rep, pos, why):
    """The row of a run not made, saying why."""
    row = {k: "" for k in CSV_FIELDS}
    row.update({"workload": job.workload, "allocator": alloc.name, "threads": job.threads,
                "rep": rep + 1, "order": pos + 1, "status": "skipped", "detail": why,
                "started": datetime.datetime.now().isoformat(timespec="seconds")})
    return row


def run_one(job, alloc, rep, pos, bindir, base_env, timeout, bwa_inputs, sam_tmp):
    """One run of job on alloc: its CSV row, whatever happened.  On this
    tree's mmalloc, also its scaling counters (MMALLOC_STATS=2: the
    statistics as a JSON line on stderr at exit)."""
    env = alloc.env(base_env)
    if alloc.origin == "mmalloc":
        env["MMALLOC_STATS"] = "2"
    started = datetime.datetime.now().isoformat(timespec="seconds")
    row = {"workload": job.workload, "allocator": alloc.name, "threads": job.threads,
           "rep": rep + 1, "order": pos + 1, "started": started, "checksum": "",
           "checksum_ok": "", "seconds": "", "ops": "", "ops_per_sec": "", "detail": ""}
    if job.kind == "bwa":
        r = run_bwa(job, env, timeout, row, bwa_inputs, sam_tmp)
    elif job.kind == "real":
        r = run_workload(job, env, timeout, row, bindir,
                         [os.path.join(HERE, a) if a.startswith("real/") else a
                          for a in suite.REAL[job.workload]["command"]])
    else:
        r = run_workload(job, env, timeout, row, bindir)
    copy_measurements(row, r)
    if alloc.origin == "mmalloc":
        copy_counters(row, r.get("stderr", ""))
    return row


def copy_counters(row, stderr):
    """mmalloc's scaling counters (the "total" object of its exit-time JSON
    line) into row's mm_ columns.  The first such line is the workload's:
    GNU time, which measures it, runs on the preloaded mmalloc too and
    prints its own line after the workload has exited."""
    for line in stderr.splitlines():
        if line.startswith('{"version"'):
            try:
                total = json.loads(line)["total"]
            except (ValueError, KeyError):
                return
            for k in report.SCALING_COUNTERS:
                row["mm_" + k] = total.get(k, "")
            return


def run_workload(job, env, timeout, row, bindir, command=None):
    """A suite workload (or a real program's driver, command), its JSON
    line's time, ops and checksum put in row; run_child's dict."""
    cmd = (command or [os.path.join(bindir, job.workload)]) + ["threads=%d" % job.threads] + job.args
    row["args"] = " ".join(cmd[len(command or [0]):])
    r = run_child(cmd, env, timeout)
    if r["status"] == "ok":
        j = parse_json_line(r["stdout"])
        if not j or "checksum" not in j or "seconds" not in j:
            r["status"], r["detail"] = "bad-output", "no JSON result line"
        else:
            row["checksum"] = j["checksum"]
            row["seconds"] = "%.6f" % j["seconds"]
            row["ops"] = j.get("ops", "")
            row["ops_per_sec"] = "%.1f" % j.get("ops_per_sec", 0)
    return r


def run_bwa(job, env, timeout, row, bwa_inputs, sam_tmp):
    """bwa mem, wall time, SAM records (ops) and digest (checksum) put in row; run_child's dict."""
    ref, r1, r2 = bwa_inputs
    cmd = bwa_data.command(job.threads, ref, r1, r2)
    sam = os.path.join(sam_tmp, "out.sam")
    r = run_child(cmd, env, timeout, stdout_path=sam)
    row["args"] = " ".join(cmd[1:6])
    if r["status"] == "ok":
        try:
            digest, records, mapped = bwa_data.sam_summary(sam)
            row["checksum"] = digest
            row["ops"] = records
            row["seconds"] = "%.6f" % r["wall_s"]
            row["ops_per_sec"] = "%.1f" % (records / r["wall_s"]) if r["wall_s"] else ""
            if records == 0:
                r["status"], r["detail"] = "bad-output", "no SAM records"
            else:
                row["detail"] = "%d of %d records mapped" % (mapped, records)
        except (OSError, ValueError) as e:
            r["status"], r["detail"] = "bad-output", "unreadable SAM: %s" % e
    if os.path.exists(sam):
        os.unlink(sam)
    return r


def copy_measurements(row, r):
    """Copies run_child's status and rusage measurements into the CSV row."""
    for k in ("status", "exit_code", "signal"):
        row[k] = r.get(k, "")
    if r.get("detail"):
        row["detail"] = r["detail"]
    for k in ("wall_s", "user_s", "sys_s"):
        row[k] = "%.4f" % r[k] if k in r else ""
    for k in ("maxrss_kb", "minflt", "majflt", "nvcsw", "nivcsw"):
        row[k] = r.get(k, "")


# --------------------------------------------------------------------------
# after the runs
# --------------------------------------------------------------------------

def settle_checksums(rows):
    """Marks runs whose checksum disagrees with the others for the same work.

    The reference for (workload, threads) is the checksum most runs agree on
    (glibc's when there is a tie).  A run that finished but disagrees is a
    wrong result: status 'wrong-checksum'.
    """
    groups = {}
    for r in rows:
        if r["status"] in ("ok", "wrong-checksum") and r["checksum"]:
            groups.setdefault((r["workload"], r["threads"]), []).append(r)
    for key, rs in groups.items():
        counts = {}
        for r in rs:
            counts[r["checksum"]] = counts.get(r["checksum"], 0) + 1
        best = max(counts.values())
        cands = [c for c, n in counts.items() if n == best]
        ref = cands[0]
        if len(cands) > 1:
            glibc = [r["checksum"] for r in rs if r["allocator"] == "glibc"]
            if glibc and glibc[0] in cands:
                ref = glibc[0]
        for r in rs:
            if r["checksum"] == ref:
                r["checksum_ok"] = "yes" if len(rs) > 1 else "single"
                if r["status"] == "wrong-checksum":
                    r["status"] = "ok"
            else:
                r["checksum_ok"] = "no"
                r["status"] = "wrong-checksum"
                r["detail"] = "checksum %s, others agree on %s" % (r["checksum"], ref)


def fastpath_counts(args, mode, allocs, bindir, out, notes):
    """The callgrind fast-path counts, also written to fastpath.csv; {} (and a note) if skipped."""
    fast = {}
    if args.no_callgrind:
        return fast
    if not callgrind.available():
        notes.append("fast-path counts skipped: valgrind not installed")
        return fast
    sizes = suite.FASTPATH_SIZES
    batches = suite.FASTPATH_BATCHES[mode]
    for a in allocs:
        log("callgrind: %s, sizes %s, %d batches of 64" % (a.name, sizes, batches))
        fast[a.name] = callgrind.measure(os.path.join(bindir, "fastpath"), a, sizes, batches)
    write_fastpath_csv(os.path.join(out, "fastpath.csv"), fast)
    return fast


def write_fastpath_csv(path, fast):
    """Writes fastpath.csv: allocator, size, instructions per malloc+free pair (or the error)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["allocator", "size", "instructions_per_pair"])
        for a, d in fast.items():
            for s, v in d.items():
                w.writerow([a, s, "%.1f" % v if isinstance(v, float) else v])


# --------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------

def parse_args(argv):
    """The command-line options (python3 bench/run.py --help)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="the whole matrix (make bench FULL=1)")
    ap.add_argument("--tiny", action="store_true", help="smallest arguments (tests)")
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"),
                    help="where bench/<workload> and libmmalloc.so are (default: build/)")
    ap.add_argument("--out", help="output directory (default bench/results/<date>-<host>)")
    ap.add_argument("--reps", type=int, help="repetitions (default 3 quick, 5 full)")
    ap.add_argument("--threads", type=lambda s: [int(x) for x in s.split(",")],
                    help="thread counts, comma-separated (default 1,2,32 quick; "
                         "1,2,8,32,128 full)")
    ap.add_argument("--workloads", type=lambda s: s.split(","),
                    help="comma-separated subset of: %s" % ",".join(suite.all_names()))
    ap.add_argument("--allocs", type=lambda s: s.split(","),
                    help="comma-separated subset of the allocators found")
    ap.add_argument("--alloc", action="append", default=[], metavar="NAME=PATH",
                    help="also measure this LD_PRELOAD library (repeatable)")
    ap.add_argument("--alloc-env", action="append", default=[], metavar="NAME:VAR=VALUE",
                    help="set VAR=VALUE in every run of allocator NAME (repeatable)")
    ap.add_argument("--timeout", type=float, help="per-run timeout in seconds "
                    "(default 120 quick, 900 full)")
    ap.add_argument("--no-install", action="store_true",
                    help="never apt-get install missing peers, even as root")
    ap.add_argument("--no-callgrind", action="store_true", help="skip the fast-path counts")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    ap.add_argument("--seed", type=int, default=1, help="seed of the allocator order shuffle")
    ap.add_argument("--list", action="store_true", help="list workloads and allocators, exit")
    return ap.parse_args(argv)


def print_list(allocs, missing):
    """--list: the workloads with their summaries, then the allocators found and missing."""
    for name in suite.all_names():
        print("%-14s %s" % (name, suite.summary(name)))
    print()
    for a in allocs:
        print("%-10s %s  %s" % (a.name, a.path or "(glibc, no preload)", a.version))
    for name, _, why in missing:
        print("%-10s missing: %s" % (name, why))


def announce_allocators(allocs, missing, notes):
    """Logs the allocators not measured and discovery's notes; exits if none is left."""
    for name, _, why in missing:
        log("allocator %s not measured: %s" % (name, why))
    for n in notes:
        log(n)
    if not allocs:
        raise SystemExit("no allocator to measure")


def main(argv=None):
    """make bench: plan, run every job on every allocator, then write the results and report."""
    args = parse_args(argv)
    mode, threads, jobs = plan(args)
    reps = fill_defaults(args, mode)
    allocs, missing, notes = allocators.discover(args.build_dir, args.alloc, args.allocs,
                                                 install=not args.no_install, log=log)
    if args.list:
        print_list(allocs, missing)
        return 0
    allocators.apply_env(allocs, args.alloc_env)
    announce_allocators(allocs, missing, notes)
    build = find_build(args.build_dir, log)
    bindir = os.path.join(build, "bench")
    out = output_dir(args)
    jobs, bwa_inputs = prepare_bwa(drop_missing_real(jobs, notes), mode, notes)
    env_text = environment(allocs, missing, notes, mode, threads, reps, jobs, build, args)
    write_environment(out, env_text)

    csv_path = os.path.join(out, "results.csv")
    t_start = time.monotonic()
    rows = run_matrix(jobs, reps, allocs, bindir, bwa_inputs, args, csv_path, t_start)
    settle_checksums(rows)
    write_csv(csv_path, rows)
    fast = fastpath_counts(args, mode, allocs, bindir, out, notes)
    finish_environment(out, t_start)

    meta = {"mode": mode, "threads": threads, "reps": reps, "jobs": jobs,
            "allocators": [a.name for a in allocs], "missing": missing, "notes": notes,
            "timeout": args.timeout, "env_text": env_text,
            "elapsed": time.monotonic() - t_start}
    report.write(out, rows, fast, meta, plots=not args.no_plots, log=log)
    bad = sum(1 for r in rows if r["status"] != "ok")
    log("report: %s (%d runs, %d not ok, %.0f s)" % (os.path.join(out, "report.md"), len(rows),
                                                     bad, time.monotonic() - t_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
