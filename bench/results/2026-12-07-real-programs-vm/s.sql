CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b INTEGER, c TEXT);
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i < 400000)
INSERT INTO t SELECT i, hex(randomblob(abs(random()) % 40 + 4)), abs(random()) % 1000, printf('%08d-%s', i, substr(hex(randomblob(16)),1, i % 30)) FROM r;
CREATE INDEX ta ON t(a);
CREATE INDEX tb ON t(b, c);
SELECT b, count(*), max(length(a)) FROM t GROUP BY b ORDER BY 2 DESC LIMIT 3;
SELECT count(DISTINCT substr(c, 1, 5)) FROM t;
DELETE FROM t WHERE b % 3 = 0;
SELECT count(*) FROM t;
