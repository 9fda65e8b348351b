#!/bin/sh
# cgroup_real.sh — test/stress/cgroup.c's `real` mode inside a real cgroup:
# a child cgroup of this process's own, with a memory limit of MIB MiB
# (cgroup v2 with the memory controller, or v1's memory hierarchy) and,
# where the cpu controller can be used too, a quota of one CPU.  Needs
# root and a writable cgroup file system; where it cannot make the cgroup
# it says why and exits 77 (ctest: skipped).
#
# usage: cgroup_real.sh TEST_BINARY [MIB]
set -u
bin=$1
mib=${2:-512}
skip() { echo "cgroup_real: skipped: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "not root"
name=mmalloc-test-$$
mem_dir= cpu_dir= quota=0
v2_path=$(sed -n 's/^0:://p' /proc/self/cgroup)
v2_mount=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)
v1_mem_path=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3; exit}' /proc/self/cgroup)
v1_mem_mount=$(awk '$9 == "cgroup" && $NF ~ /(^|,)memory(,|$)/ {print $5; exit}' /proc/self/mountinfo)
v1_cpu_path=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3; exit}' /proc/self/cgroup)
v1_cpu_mount=$(awk '$9 == "cgroup" && $NF ~ /(^|,)cpu(,|$)/ {print $5; exit}' /proc/self/mountinfo)

cleanup() {
  for d in $mem_dir $cpu_dir; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
}
trap cleanup EXIT

if [ -n "$v2_mount" ] && [ -n "$v2_path" ] &&
   grep -qw memory "$v2_mount$v2_path/cgroup.controllers" 2>/dev/null; then
  parent=$v2_mount${v2_path%/}
  # a child gets the memory controller only if the parent hands it down
  grep -qw memory "$parent/cgroup.subtree_control" ||
    echo +memory > "$parent/cgroup.subtree_control" 2>/dev/null ||
    skip "cannot enable the memory controller below $parent (it has processes of its own?)"
  mem_dir=$parent/$name
  mkdir "$mem_dir" 2>/dev/null || skip "cannot create $mem_dir"
  echo $((mib << 20)) > "$mem_dir/memory.max" || skip "cannot set memory.max"
  if { grep -qw cpu "$parent/cgroup.subtree_control" ||
         echo +cpu > "$parent/cgroup.subtree_control"; } 2>/dev/null &&
     echo "100000 100000" > "$mem_dir/cpu.max" 2>/dev/null; then
    quota=1
  fi
  procs="$mem_dir/cgroup.procs"
elif [ -n "$v1_mem_mount" ] && [ -n "$v1_mem_path" ]; then
  mem_dir=$v1_mem_mount${v1_mem_path%/}/$name
  mkdir "$mem_dir" 2>/dev/null || skip "cannot create $mem_dir"
  echo $((mib << 20)) > "$mem_dir/memory.limit_in_bytes" || skip "cannot set the memory limit"
  procs="$mem_dir/cgroup.procs"
  if [ -n "$v1_cpu_mount" ] && [ -n "$v1_cpu_path" ]; then
    cpu_dir=$v1_cpu_mount${v1_cpu_path%/}/$name
    if mkdir "$cpu_dir" 2>/dev/null && echo 100000 > "$cpu_dir/cpu.cfs_period_us" &&
       echo 100000 > "$cpu_dir/cpu.cfs_quota_us"; then
      procs="$procs $cpu_dir/cgroup.procs"
      quota=1
    else
      cpu_dir=
    fi
  fi
else
  skip "no cgroup v2 memory controller and no v1 memory hierarchy"
fi

[ $quota = 1 ] && q="a quota of one CPU" || q="no CPU quota (the cpu controller is not ours)"
echo "cgroup_real: memory limit $mib MiB in $mem_dir; $q"
# The test runs in a child shell moved into the cgroup(s); this shell stays
# outside so that it can remove them afterwards.
sh -c 'for p in '"$procs"'; do echo $$ > $p || exit 3; done; exec "$0" real "$1" "$2"' \
  "$bin" "$mib" "$quota" || exit 1
# MMALLOC_CGROUP=0 in the same cgroup: nothing read, so one heap per CPU
# despite the quota, and no limit (only a quota tells the two apart)
[ $quota = 1 ] || exit 0
sh -c 'for p in '"$procs"'; do echo $$ > $p || exit 3; done; MMALLOC_CGROUP=0 exec "$0" off' "$bin"

