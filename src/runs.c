/*-------------------------------------------------------------------------
 *
 * runs.c
 *		chronicle.run_begin(): open a benchmark run, remembering the
 *		settings its caller may read.
 *
 * A run keeps the non-default settings at its start in chronicle.run,
 * which every monitoring role reads.  They must be read with the rights of
 * the caller: a SECURITY DEFINER function would read them with its
 * owner's, and store, say, primary_conninfo for pg_read_all_stats to see
 * although current_setting() refuses it to them.  Writing the run needs
 * the owner's rights (the caller cannot write chronicle.run), and the
 * settings must not be the caller's to choose.  So this function runs as
 * its caller while it reads the settings from pg_settings (which shows a
 * role only what current_setting() lets it read), then as its owner, as a
 * SECURITY DEFINER function would, while it writes the run with
 * chronicle._run_open() (executable by the owner only), which redacts the
 * passwords.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/syscache.h"

#include "environment.h"

PG_FUNCTION_INFO_V1(chronicle_run_begin);

/* The owner of the function being called: whose rights write the run. */
static Oid
function_owner(Oid fn_oid)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn_oid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", fn_oid);
	owner = ((Form_pg_proc) GETSTRUCT(tup))->proowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * The settings (names, values: text arrays of the same length) without
 * those only superusers and pg_read_all_settings may read
 * (GUC_SUPERUSER_ONLY: shared_preload_libraries, primary_conninfo, file
 * paths, ...): a run is read by every member of pg_read_all_stats, who may
 * not read them, whoever opened it.
 */
static void
keep_readable_settings(Datum *names, Datum *values)
{
	Datum	   *n;
	Datum	   *v;
	int			nn;
	int			nv;
	int			kept = 0;

	deconstruct_array_builtin(DatumGetArrayTypeP(*names), TEXTOID, &n, NULL, &nn);
	deconstruct_array_builtin(DatumGetArrayTypeP(*values), TEXTOID, &v, NULL, &nv);
	if (nn != nv)
		elog(ERROR, "settings: %d names, %d values", nn, nv);
	for (int i = 0; i < nn; i++)
	{
		char	   *name = TextDatumGetCString(n[i]);

		if ((GetConfigOptionFlags(name, true) & GUC_SUPERUSER_ONLY) != 0)
			continue;
		n[kept] = n[i];
		v[kept] = v[i];
		kept++;
	}
	*names = PointerGetDatum(construct_array_builtin(n, kept, TEXTOID));
	*values = PointerGetDatum(construct_array_builtin(v, kept, TEXTOID));
}

/* chronicle.run_begin(label text, meta jsonb DEFAULT '{}') → chronicle.run */
Datum
chronicle_run_begin(PG_FUNCTION_ARGS)
{
	Oid			argtypes[5] = {TEXTOID, JSONBOID, TEXTARRAYOID, TEXTARRAYOID, JSONBOID};
	Datum		args[5];
	char		argnulls[5] = {' ', ' ', ' ', ' ', ' '};
	Datum		run;
	bool		isnull;
	Oid			save_userid;
	int			save_sec_context;
	int			ret;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/*
	 * The settings, as the caller: all of them, those at their built-in
	 * default too (data_checksums, debug_assertions, block_size, io_method
	 * tell two servers apart as much as any configured one), but for what
	 * only this session set or is (client, session; override: the
	 * transaction's isolation, the paths of the configuration files; the
	 * role), which says nothing about the server being measured.
	 * pg_catalog only, so the caller needs no right on anything of the
	 * extension's.
	 */
	ret = SPI_execute("SELECT pg_catalog.array_agg(s.name ORDER BY s.name),"
					  " pg_catalog.array_agg(pg_catalog.current_setting(s.name) ORDER BY s.name)"
					  " FROM pg_catalog.pg_settings s"
					  " WHERE s.source NOT IN ('override', 'client', 'session')"
					  "   AND s.name NOT IN ('is_superuser', 'session_authorization', 'role')",
					  true, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the settings: %s", SPI_result_code_string(ret));
	for (int i = 0; i < 2; i++)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									  i + 1, &isnull);

		args[2 + i] = isnull ? (Datum) 0 : datumCopy(d, false, -1);
		argnulls[2 + i] = isnull ? 'n' : ' ';
	}
	if (argnulls[2] == ' ' && argnulls[3] == ' ')
		keep_readable_settings(&args[2], &args[3]);

	/* The environment, as the caller: its rights decide what it holds. */
	args[4] = DirectFunctionCall1(jsonb_in, CStringGetDatum(chronicle_environment_json()));

	/*
	 * The run, as the owner.  An error on the way restores the caller's
	 * rights with the (sub)transaction's abort, as for SECURITY DEFINER.
	 */
	args[0] = PG_ARGISNULL(0) ? (Datum) 0 : PG_GETARG_DATUM(0);
	args[1] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	argnulls[0] = PG_ARGISNULL(0) ? 'n' : ' ';
	argnulls[1] = PG_ARGISNULL(1) ? 'n' : ' ';

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(function_owner(fcinfo->flinfo->fn_oid),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	ret = SPI_execute_with_args("SELECT chronicle._run_open($1, $2, $3, $4, $5)",
								5, argtypes, args, argnulls, false, 1);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not open the run: %s", SPI_result_code_string(ret));

	run = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		elog(ERROR, "chronicle._run_open() returned NULL");
	run = SPI_datumTransfer(run, false, -1);
	SPI_finish();
	PG_RETURN_DATUM(run);
}
