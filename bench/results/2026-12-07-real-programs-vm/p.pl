my %h; for my $i (1..800000) { $h{"key$i"} = "v" x ($i % 60); }
my $n = 0; for (keys %h) { $n += length $h{$_}; }
delete $h{"key$_"} for 1..400000;
my @a = map { [$_, "s$_" x 3] } 1..300000; @a = sort { $b->[1] cmp $a->[1] } @a;
print "$n ", scalar(@a), "\n";
