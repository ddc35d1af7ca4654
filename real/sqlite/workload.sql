-- workload.sql - a deterministic SQLite workload for the rarewrite port.
-- Run by real/sqlite/run against the unprotected and the protected shell;
-- the outputs must be identical. Touches the file VFS (rollback journal
-- and WAL), memdb, the built-in function table (scalar, aggregate, window,
-- JSON, date, math), FTS5, R*Tree, triggers, savepoints, VACUUM and
-- sqlite3_config()/test-control paths of the shell.
.bail on
.testctrl prng_seed 20261204
.mode list
.headers off
PRAGMA page_size=4096;
PRAGMA journal_mode=WAL;
PRAGMA cache_size=-8000;

CREATE TABLE cust(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, born TEXT, score REAL);
CREATE TABLE ord(id INTEGER PRIMARY KEY, cust INTEGER REFERENCES cust(id), item TEXT, qty INT, price REAL, at TEXT);
CREATE TABLE audit(n INTEGER PRIMARY KEY, what TEXT);
CREATE TRIGGER ord_audit AFTER UPDATE OF qty ON ord WHEN new.qty > 90
BEGIN INSERT INTO audit(what) VALUES ('big ' || new.id || ' ' || new.qty); END;

BEGIN;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i<20000)
INSERT INTO cust SELECT i, 'name' || printf('%06d', (i*7919)%20000),
  char(65+i%26, 65+(i/26)%26) || 'ville',
  date('1950-01-01', '+' || ((i*37)%25000) || ' days'),
  round(abs(random()%100000)/1000.0, 3) FROM c;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i<120000)
INSERT INTO ord SELECT i, 1+(i*104729)%20000, 'item' || (i%97), 1+abs(random())%100,
  round((i%1000)/7.0, 2), datetime('2020-01-01', '+' || (i*13) || ' minutes') FROM c;
COMMIT;
CREATE INDEX ord_cust ON ord(cust, at);
CREATE INDEX cust_city ON cust(city, score DESC);
ANALYZE;

SELECT count(*), sum(qty), round(sum(qty*price), 2), min(at), max(at) FROM ord;
SELECT city, count(*), round(avg(score), 3), max(born) FROM cust GROUP BY city ORDER BY count(*) DESC, city LIMIT 8;
SELECT c.city, o.item, sum(o.qty) AS q FROM cust c JOIN ord o ON o.cust=c.id
  WHERE c.score > 50 GROUP BY 1, 2 HAVING q > 300 ORDER BY q DESC, 1, 2 LIMIT 10;
SELECT id, name, rank() OVER w, round(sum(score) OVER w, 3),
  lag(name) OVER w, ntile(4) OVER w FROM cust WHERE city LIKE 'A%'
  WINDOW w AS (PARTITION BY city ORDER BY score DESC, id) ORDER BY id LIMIT 12;
SELECT strftime('%Y-%m', at) m, count(*), total(qty) FROM ord GROUP BY m ORDER BY m LIMIT 6;
SELECT group_concat(item, ',') FROM (SELECT DISTINCT item FROM ord ORDER BY item LIMIT 15);
SELECT round(sqrt(sum(qty)), 6), round(ln(count(*)), 6), round(pi()*power(2, 10), 6),
  ceil(avg(price)), floor(-avg(price)), round(stddev, 4)
  FROM ord, (SELECT sqrt(avg(score*score) - avg(score)*avg(score)) stddev FROM cust);
SELECT hex(randomblob(8)), abs(random()) % 1000;
SELECT upper(substr(name, 5)), instr(name, '9'), replace(city, 'ville', '-v'),
  unicode(city), quote(score), typeof(born), length(printf('%.20f', score)) FROM cust WHERE id % 5000 = 0;

-- JSON
CREATE TABLE doc(id INTEGER PRIMARY KEY, j TEXT);
INSERT INTO doc SELECT id, json_object('id', id, 'name', name, 'tags', json_array(city, born, id%7),
  'nested', json_object('score', score, 'odd', id%2=1)) FROM cust WHERE id <= 3000;
SELECT count(*), sum(json_extract(j, '$.nested.score') > 50), max(json_array_length(j, '$.tags')) FROM doc;
SELECT json_group_array(json_extract(j, '$.tags[2]')) FROM doc WHERE id < 12;
SELECT key, value FROM doc, json_each(doc.j, '$.nested') WHERE doc.id = 42;
SELECT json_patch(j, '{"nested":{"odd":null},"x":1}') FROM doc WHERE id = 7;
SELECT fullkey, type FROM doc, json_tree(doc.j) WHERE doc.id = 9 ORDER BY fullkey;

-- FTS5
CREATE VIRTUAL TABLE ft USING fts5(body, tokenize='porter');
INSERT INTO ft SELECT name || ' lives in ' || city || ' and ordered ' ||
  (SELECT group_concat(item, ' ') FROM ord WHERE cust = cust.id) FROM cust WHERE id <= 4000;
SELECT count(*) FROM ft WHERE ft MATCH 'item3 NOT item4';
SELECT rowid, highlight(ft, 0, '[', ']') FROM ft WHERE ft MATCH 'abville' ORDER BY rank, rowid LIMIT 3;
SELECT count(*) FROM ft WHERE ft MATCH 'NEAR(lives ordered, 3)';
INSERT INTO ft(ft) VALUES('optimize');

-- R*Tree
CREATE VIRTUAL TABLE box USING rtree(id, x0, x1, y0, y1);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i<20000)
INSERT INTO box SELECT i, (i*31)%1000, (i*31)%1000 + i%17, (i*57)%1000, (i*57)%1000 + i%13 FROM c;
SELECT count(*) FROM box WHERE x0 >= 100 AND x1 <= 300 AND y0 >= 200 AND y1 <= 600;
SELECT id FROM box WHERE x0 <= 500 AND x1 >= 500 AND y0 <= 500 AND y1 >= 500 ORDER BY id;

-- Writes, triggers, savepoints, upsert
UPDATE ord SET qty = qty + 3 WHERE id % 11 = 0;
SELECT count(*), min(n), max(n) FROM audit;
SAVEPOINT a;
DELETE FROM ord WHERE item = 'item5';
SAVEPOINT b;
UPDATE cust SET score = -1;
ROLLBACK TO b;
RELEASE b;
SELECT count(*) FROM ord;
ROLLBACK TO a;
RELEASE a;
SELECT count(*) FROM ord;
CREATE TABLE kv(k TEXT PRIMARY KEY, v INT) WITHOUT ROWID;
INSERT INTO kv SELECT item, qty FROM ord WHERE id < 2000 ON CONFLICT(k) DO UPDATE SET v = v + excluded.v;
SELECT count(*), sum(v) FROM kv;
CREATE VIEW top_cust AS SELECT cust, sum(qty*price) s FROM ord GROUP BY cust ORDER BY s DESC LIMIT 5;
SELECT cust, round(s, 2) FROM top_cust;
WITH RECURSIVE fib(a, b, n) AS (SELECT 0, 1, 0 UNION ALL SELECT b, a+b, n+1 FROM fib WHERE n < 80)
SELECT max(a) FROM fib;

-- memdb and a second schema
ATTACH 'file:side?mode=memory&vfs=memdb' AS side;
CREATE TABLE side.t AS SELECT * FROM ord WHERE id % 100 = 0;
SELECT count(*), sum(qty) FROM side.t;
DETACH side;

PRAGMA wal_checkpoint(TRUNCATE);
PRAGMA journal_mode=DELETE;
DELETE FROM ord WHERE id % 3 = 0;
VACUUM;
PRAGMA integrity_check;
PRAGMA foreign_key_check;
SELECT count(*) FROM dbstat;
.sha3sum
.dbinfo
.vfsname
