{ for (i = 1; i <= NF; i++) { w[$i]++; s[$i] = s[$i] substr($i, 1, 3) } }
END { n = 0; for (k in w) n += w[k] + length(s[k]); print n }
