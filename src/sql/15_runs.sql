-- Benchmark runs: a labelled time range, with what the server looked like
-- when it started.  Created by chronicle.run_begin()/run_end() or by
-- labelling a past range (src/sql/36_runs.sql).
CREATE TABLE chronicle.run (
	run_id         integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	label          text NOT NULL CHECK (label <> ''),
	started        timestamptz NOT NULL,
	ended          timestamptz,            -- NULL while the run is open
	meta           jsonb NOT NULL DEFAULT '{}',
	settings       jsonb NOT NULL DEFAULT '{}',   -- settings at the start
	server_version text,
	environment    jsonb NOT NULL DEFAULT '{}',   -- build, OS, CPU, devices (src/environment.c)
	owner          text,                   -- the login role that opened it; NULL before 0.3.0
	-- the start left out of every analysis of the run (run_window()); 0.3.0
	warmup         interval NOT NULL DEFAULT '0' CHECK (warmup >= interval '0'),
	-- the server that recorded it: 0 this one, else chronicle.origin's
	-- (an imported run, 05_origin.sql); 0.3.0
	origin         integer NOT NULL DEFAULT 0,
	-- a subscribed server's run on a central database (42_central.sql):
	-- its origin, in whose runs its label is unique; 0: this server's and
	-- the imported runs, whose labels are unique together; 0.3.0
	server         integer NOT NULL DEFAULT 0,
	CHECK (ended IS NULL OR ended >= started),
	UNIQUE (label, server)
);
COMMENT ON TABLE chronicle.run IS
	'Benchmark runs: a labelled time range with its metadata, settings, server version and environment';
