exec 3>${OUT:-/tmp/fd3-out.txt}
for i in $(seq 1 3000); do echo "line $i" >&3; x=$(printf '%s' "$i$i$i"); done
exec 3>&-
wc -l < ${OUT:-/tmp/fd3-out.txt}
