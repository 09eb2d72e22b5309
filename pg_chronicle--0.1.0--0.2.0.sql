-- pg_chronicle 0.1.0 -> 0.2.0
--
-- Every change to the SQL of src/sql/ since 0.1.0 is repeated here, in the
-- order it was made, so that ALTER EXTENSION pg_chronicle UPDATE on an
-- installed 0.1.0 reaches the same catalog as CREATE EXTENSION of 0.2.0
-- (test/t/040_upgrade.pl compares the two).

\echo Use "ALTER EXTENSION pg_chronicle UPDATE TO '0.2.0'" to load this file. \quit
