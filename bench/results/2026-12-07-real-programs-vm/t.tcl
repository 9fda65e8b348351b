set d [dict create]
for {set i 0} {$i < 300000} {incr i} { dict set d k$i [string repeat x [expr {$i % 50}]] }
set n 0
dict for {k v} $d { incr n [string length $v] }
for {set i 0} {$i < 300000} {incr i 2} { dict unset d k$i }
puts "$n [dict size $d]"
