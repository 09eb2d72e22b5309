#!/usr/bin/env python3
"""Generates src/sql/31_deltas.sql: the per-interval, totals and run-totals
functions of every source, and their rows of the metric catalog.

The functions share one shape, so they are written once here and the
generated SQL is checked in (read it, not this, to see what runs):

  tools/gen_deltas.py > src/sql/31_deltas.sql

The per-interval functions check their arguments and hand the table's
description (keys, values and their kinds, attributes, reset column) to
chronicle._deltas(), the C engine in src/deltas.c, which reads the rows
once in time order.  Keyed sources (several rows per snapshot: io,
database, waits, os_disk, os_pressure) give a row per key and interval
(zero-filled unless changed_only); single-row sources (wal, checkpointer,
bgwriter, wait_sampler, buffers, os_memory) a row per interval.

Reset: a changed stats_reset (or sampler_started) or any counter going
backwards: the interval is flagged reset = true and its deltas are NULL
(the row is the new baseline).

Born at zero (born_at_zero below): whether a key that appears within a
segment started counting from zero when it appeared.  True for the wait
sampler's keys (it counts a key from its first sample) and for databases
(a database created within the segment starts at zero; every database
that existed is written in the segment's keyframe).  Then a key's first
row after a keyframe of its segment that recorded the table counts from
zero, in the engine and in the totals' shortcut.  False for every other
source: a pg_stat_io or pg_stat_wal cell, a disk, a pressure resource that
shows up mid-segment (the source was off or failed at the keyframe)
carries its count since the server started, so its first row is only a
baseline.  (pg_stat_statements entries are born at zero too; they are read
by chronicle.statements_top(), which tells a new entry by stats_since.)

Privileges: chronicle._deltas() takes a table description from its caller
and is granted to nobody; the functions that call it (<source>_deltas,
<source>_values, _<source>_sums) are SECURITY DEFINER, with the description
written here, and granted to pg_monitor and pg_read_all_stats.  The only
names a caller chooses are _<source>_sums' "by" and "exclude_cols", which it
checks against the source's keys before the engine sees them.
"""

import sys

# kind: c = bigint counter, t = float8 time counter (ms), g = gauge (value),
# a = attribute (carried, e.g. datname, op_bytes)
SOURCES = [
    dict(name='io', table='io_history', fn='io',
         keys=[('backend_type', 'text'), ('object', 'text'), ('context', 'text')],
         filters=['backend_type', 'object', 'context'],
         cols=[('reads', 'c'), ('read_bytes', 'c'), ('read_time', 't'),
               ('writes', 'c'), ('write_bytes', 'c'), ('write_time', 't'),
               ('writebacks', 'c'), ('writeback_time', 't'),
               ('extends', 'c'), ('extend_bytes', 'c'), ('extend_time', 't'),
               ('hits', 'c'), ('evictions', 'c'), ('reuses', 'c'),
               ('fsyncs', 'c'), ('fsync_time', 't'), ('op_bytes', 'a')],
         # bytes: the 18 counter, else operations * op_bytes (16, 17)
         bytes={'read_bytes': 'reads', 'write_bytes': 'writes', 'extend_bytes': 'extends'},
         per_op=[('ms_per_read', 'read_time', 'reads'), ('ms_per_write', 'write_time', 'writes'),
                 ('ms_per_writeback', 'writeback_time', 'writebacks'),
                 ('ms_per_extend', 'extend_time', 'extends'), ('ms_per_fsync', 'fsync_time', 'fsyncs')],
         reset='stats_reset'),
    dict(name='database', table='database_history', fn='database',
         keys=[('datid', 'oid')], filters=['datname'],
         cols=[('datname', 'a'), ('xact_commit', 'c'), ('xact_rollback', 'c'),
               ('blks_read', 'c'), ('blks_hit', 'c'), ('tup_returned', 'c'),
               ('tup_fetched', 'c'), ('tup_inserted', 'c'), ('tup_updated', 'c'),
               ('tup_deleted', 'c'), ('conflicts', 'c'), ('temp_files', 'c'),
               ('temp_bytes', 'c'), ('deadlocks', 'c'), ('checksum_failures', 'c'),
               ('blk_read_time', 't'), ('blk_write_time', 't'), ('session_time', 't'),
               ('active_time', 't'), ('idle_in_transaction_time', 't'),
               ('sessions', 'c'), ('sessions_abandoned', 'c'), ('sessions_fatal', 'c'),
               ('sessions_killed', 'c'), ('parallel_workers_to_launch', 'c'),
               ('parallel_workers_launched', 'c')],
         per_op=[('ms_per_blk_read', 'blk_read_time', 'blks_read')],
         reset='stats_reset', born_at_zero=True),
    dict(name='wait', table='waits_history', fn='wait',
         keys=[('backend_type', 'text'), ('state', 'text'), ('wait_event_type', 'text'),
               ('wait_event', 'text'), ('queryid', 'bigint')],
         filters=['backend_type', 'wait_event_type', 'wait_event'],
         cols=[('samples', 'c')], per_op=[], reset=None, born_at_zero=True),
    dict(name='os_disk', table='os_disk_history', fn='os_disk',
         keys=[('device', 'text'), ('role', 'text')], filters=['device'],
         cols=[('reads_completed', 'c'), ('reads_merged', 'c'), ('sectors_read', 'c'),
               ('read_time_ms', 'c'), ('writes_completed', 'c'), ('writes_merged', 'c'),
               ('sectors_written', 'c'), ('write_time_ms', 'c'), ('io_time_ms', 'c'),
               ('weighted_io_time_ms', 'c'), ('discards_completed', 'c'),
               ('discards_merged', 'c'), ('sectors_discarded', 'c'), ('discard_time_ms', 'c'),
               ('flushes_completed', 'c'), ('flush_time_ms', 'c')],
         per_op=[('ms_per_read', 'read_time_ms', 'reads_completed'),
                 ('ms_per_write', 'write_time_ms', 'writes_completed')],
         reset=None),
    dict(name='os_pressure', table='os_pressure_history', fn='os_pressure',
         keys=[('resource', 'text')], filters=['resource'],
         cols=[('some_total', 'c'), ('full_total', 'c')], per_op=[], reset=None),
    dict(name='wal', table='wal_history', fn='wal', keys=[], filters=[],
         cols=[('wal_records', 'c'), ('wal_fpi', 'c'), ('wal_bytes', 'c'),
               ('wal_buffers_full', 'c'), ('wal_write', 'c'), ('wal_sync', 'c'),
               ('wal_write_time', 't'), ('wal_sync_time', 't')],
         per_op=[('ms_per_write', 'wal_write_time', 'wal_write'),
                 ('ms_per_sync', 'wal_sync_time', 'wal_sync')],
         reset='stats_reset'),
    dict(name='checkpointer', table='checkpointer_history', fn='checkpointer', keys=[], filters=[],
         cols=[('num_timed', 'c'), ('num_requested', 'c'), ('num_done', 'c'),
               ('restartpoints_timed', 'c'), ('restartpoints_req', 'c'),
               ('restartpoints_done', 'c'), ('write_time', 't'), ('sync_time', 't'),
               ('buffers_written', 'c'), ('slru_written', 'c')],
         per_op=[], reset='stats_reset'),
    dict(name='bgwriter', table='bgwriter_history', fn='bgwriter', keys=[], filters=[],
         cols=[('buffers_clean', 'c'), ('maxwritten_clean', 'c'), ('buffers_alloc', 'c')],
         per_op=[], reset='stats_reset'),
    dict(name='wait_sampler', table='wait_sampler_history', fn='wait_sampler', keys=[], filters=[],
         cols=[('ticks_due', 'c'), ('ticks_taken', 'c'), ('samples_dropped', 'c')]
         + [('active_' + c, 'c') for c in ('cpu', 'io', 'lwlock', 'lock', 'ipc', 'client',
                                           'timeout', 'other')]
         + [('background_active', 'c')],
         per_op=[], reset='sampler_started'),
    dict(name='os_memory', table='os_memory_history', fn='os_memory', keys=[], filters=[],
         cols=[('mem_total', 'g'), ('mem_free', 'g'), ('mem_available', 'g'), ('buffers', 'g'),
               ('cached', 'g'), ('dirty', 'g'), ('writeback', 'g'), ('shmem', 'g'),
               ('swap_total', 'g'), ('swap_free', 'g'),
               ('pgpgin', 'c'), ('pgpgout', 'c'), ('pswpin', 'c'), ('pswpout', 'c')],
         per_op=[], reset=None),
    dict(name='buffers', table='buffers_history', fn='buffers', keys=[], filters=[],
         cols=[(c, 'g') for c in ['buffers_total', 'buffers_used', 'buffers_unused',
                                  'buffers_dirty', 'buffers_pinned']]
         + [('usagecount_avg', 'g')]
         + [('%s_%d' % (p, i), 'g') for p in ('usage', 'dirty', 'pinned') for i in range(6)],
         per_op=[], reset=None),
]

FILTER_TYPES = {'backend_type': 'text', 'object': 'text', 'context': 'text', 'datname': 'text',
                'wait_event_type': 'text', 'wait_event': 'text', 'device': 'text',
                'resource': 'text'}
CHECKED = {'backend_type', 'object', 'context', 'wait_event_type'}

out = []


def w(s=''):
    out.append(s)


def coltype(kind):
    return {'c': 'bigint', 't': 'float8', 'g': 'float8', 'a': None}[kind]


def fn_name(s):
    return s['fn'] + ('_values' if all(k == 'g' for _, k in s['cols']) else '_deltas')


def attr_type(s, col):
    return {'datname': 'text', 'op_bytes': 'bigint'}[col]


def out_columns(s):
    """(name, type) of the per-interval function's result, after the keys."""
    cols = []
    for c, k in s['cols']:
        if k == 'a':
            cols.append((c, attr_type(s, c)))
    if s['reset'] or any(k in 'ct' for _, k in s['cols']):
        cols.append(('reset', 'boolean'))
    for c, k in s['cols']:
        if k in 'ct':
            cols.append((c, coltype(k)))
            cols.append((c + '_per_s', 'float8'))
        elif k == 'g':
            cols.append((c, 'float8' if c == 'usagecount_avg' else 'bigint'))
    for name, _, _ in s['per_op']:
        cols.append((name, 'float8'))
    return cols


def delta_expr(s, c, cur, prev):
    """Delta of column c, NULL when the row is a reset."""
    b = s.get('bytes', {})
    if c in b:
        op = b[c]
        return ('coalesce(%(cur)s.%(c)s - %(prev)s.%(c)s, (%(cur)s.%(op)s - %(prev)s.%(op)s) * %(cur)s.op_bytes)'
                % dict(cur=cur, prev=prev, c=c, op=op))
    return '%s.%s - %s.%s' % (cur, c, prev, c)


def sel(prefix, cols, alias=None):
    return ', '.join('%s.%s%s' % (prefix, c, '' if alias is None else ' AS %s%s' % (alias, c)) for c in cols)


def header(s, name, params, res, extra='', engine=False):
    w('CREATE FUNCTION chronicle.%s(%s)' % (name, ', '.join(params)))
    w('RETURNS TABLE (%s)' % ', '.join('%s %s' % c for c in res))
    w('LANGUAGE plpgsql STABLE')
    if engine:
        # chronicle._deltas() is not granted to the callers (see above)
        w('SECURITY DEFINER')
    w('SET search_path = pg_catalog, pg_temp')
    w('SET plan_cache_mode = force_custom_plan')
    if engine:
        # The result is materialized twice (by _deltas and by RETURN
        # QUERY): a day of rows stays in memory instead of going to disk.
        w("SET work_mem = '256MB'")
    w('AS $fn$')
    w('#variable_conflict use_column')
    w(extra + 'BEGIN')


def checks(s, name, first):
    w("\tPERFORM chronicle._check_range($1, $2, 'chronicle.%s');" % name)
    for i, f in enumerate(s['filters']):
        if f in CHECKED:
            w("\tPERFORM chronicle._check_name('chronicle.%s', '%s', $%d);" % (name, f, i + first))
        elif f == 'datname':
            w("\tPERFORM chronicle._check_datname('chronicle.%s', $%d, $1, $2);" % (name, i + first))


def final_select(s, z, kcols):
    """The result row from a relation z with interval columns, keys, attrs,
    reset and the counter deltas."""
    items = ['%s.interval_start' % z, '%s.interval_end' % z, '%s.seconds' % z]
    items += ['%s.%s' % (z, k) for k in kcols]
    for c, k in s['cols']:
        if k == 'a':
            items.append('%s.%s' % (z, c))
    if s['reset'] or any(k in 'ct' for _, k in s['cols']):
        items.append('%s.reset' % z)
    for c, k in s['cols']:
        if k in 'ct':
            items.append('%s.%s' % (z, c))
            items.append('%s.%s::float8 / %s.seconds' % (z, c, z))
        elif k == 'g':
            items.append('%s.%s' % (z, c))
    for nm, t, c in s['per_op']:
        items.append('%s.%s::float8 / nullif(%s.%s, 0)' % (z, t, z, c))
    return ',\n\t       '.join(items)


def sql_array(items):
    return 'ARRAY[%s]::text[]' % ', '.join("'%s'" % i if i is not None else 'NULL' for i in items)


def engine_call(s, filters, changed_only, grouped=False, by=False):
    """RETURN QUERY over chronicle._deltas() (src/deltas.c) with the table's
    description; the column definition list is the function's result.
    grouped: the changed keys summed per interval (by the key column in the
    parameter after the filters when by, with the exclusions after it)."""
    kcols = [k for k, _ in s['keys']]
    vals = [c for c, k in s['cols'] if k in 'ctg']
    kinds = ''.join(k for c, k in s['cols'] if k in 'ctg')
    attrs = [c for c, k in s['cols'] if k == 'a']
    b = s.get('bytes', {})
    if grouped:
        res = [c for c in sums_columns(s) if by or c[0] != 'grp']
    else:
        res = [('interval_start', 'timestamptz'), ('interval_end', 'timestamptz'), ('seconds', 'float8')] + \
            s['keys'] + out_columns(s)
    w('\tRETURN QUERY')
    if grouped and not by and text_keyed(s):
        w('\tSELECT d.interval_start, d.interval_end, d.seconds, NULL::text, %s'
          % ', '.join('d.%s' % c for c, _ in res[3:]))
        w("\t  FROM chronicle._deltas('chronicle.%s'::regclass, $1, $2," % s['table'])
    else:
        w("\tSELECT * FROM chronicle._deltas('chronicle.%s'::regclass, $1, $2," % s['table'])
    w('\t\tkeys => %s,' % sql_array(kcols))
    w('\t\tvals => %s,' % sql_array(vals))
    w("\t\tkinds => '%s'," % kinds)
    w('\t\tattrs => %s,' % sql_array(attrs))
    w('\t\treset_col => %s,' % ("'%s'" % s['reset'] if s['reset'] else 'NULL'))
    w('\t\tbytes_ops => %s,' % sql_array([b.get(v) for v in vals]))
    w('\t\tbytes_unit => %s,' % ("'op_bytes'" if b else 'NULL'))
    w('\t\tper_op => %s,' % sql_array([x for _, t, c in s['per_op'] for x in (t, c)]))
    w('\t\tfilter_cols => %s,' % sql_array(filters))
    w('\t\tfilter_vals => ARRAY[%s]::text[],' % ', '.join('$%d' % (i + 3) for i in range(len(filters))))
    n = len(filters)
    # the last argument closes the call; born_at_zero is false by default
    born = s.get('born_at_zero', False)
    end = ',' if born else ')'
    if grouped and text_keyed(s):
        w('\t\tchanged_only => true,')
        w('\t\tgroup_by => %s,' % ('ARRAY[$%d]' % (n + 3) if by else 'ARRAY[]::text[]'))
        w('\t\texclude_cols => $%d, exclude_vals => $%d%s' % (n + 4, n + 5, end))
    elif grouped:
        w('\t\tchanged_only => true, group_by => ARRAY[]::text[]%s' % end)
    else:
        w('\t\tchanged_only => %s%s' % (changed_only, end))
    if born:
        w('\t\tborn_at_zero => true)')
    w('\t  AS d(%s);' % ', '.join('%s %s' % c for c in res))


def text_keyed(s):
    return all(t == 'text' for _, t in s['keys'])


def sums_columns(s):
    """Result of _<fn>_sums: per interval (and group), the changed keys'
    deltas summed."""
    cols = [('interval_start', 'timestamptz'), ('interval_end', 'timestamptz'), ('seconds', 'float8')]
    if text_keyed(s):
        cols.append(('grp', 'text'))
    cols.append(('reset', 'boolean'))
    for c, k in s['cols']:
        if k in 'ct':
            cols += [(c, coltype(k)), (c + '_per_s', 'float8')]
    for nm, _, _ in s['per_op']:
        cols.append((nm, 'float8'))
    return cols


def gen_sums(s):
    """_<fn>_sums(from, to, filters, [by, exclude_cols, exclude_vals]): per
    interval the deltas of the keys that changed in it, summed (by one key
    column when by is given): what series() and timeline() read instead of
    every key's row."""
    filt = s['filters']
    name = '_%s_sums' % s['fn']
    params = ['from_ts timestamptz', 'to_ts timestamptz'] + \
        ['for_%s %s DEFAULT NULL' % (f, FILTER_TYPES[f]) for f in filt]
    sig = ['timestamptz', 'timestamptz'] + [FILTER_TYPES[f] for f in filt]
    if text_keyed(s):
        params += ['by text DEFAULT NULL', "exclude_cols text[] DEFAULT '{}'",
                   "exclude_vals text[] DEFAULT '{}'"]
        sig += ['text', 'text[]', 'text[]']
    header(s, name, params, sums_columns(s), engine=True)
    if text_keyed(s):
        kcols = sql_array([k for k, _ in s['keys']])
        n = len(filt)
        w('\tIF NOT coalesce($%d = ANY (%s), true)' % (n + 3, kcols))
        w('\t   OR NOT coalesce($%d <@ %s AND cardinality($%d) = cardinality($%d), false) THEN'
          % (n + 4, kcols, n + 4, n + 5))
        w("\t\tRAISE EXCEPTION 'chronicle.%s: by (%%) and exclude_cols (%%) must name key columns', $%d, $%d"
          % (name, n + 3, n + 4))
        w("\t\t\tUSING ERRCODE = 'invalid_parameter_value',")
        w("\t\t\t      HINT = 'The keys are %s; exclude_vals has a value per exclude_cols.';"
          % ', '.join(k for k, _ in s['keys']))
        w('\tEND IF;')
        w('\tIF $%d IS NOT NULL THEN' % (n + 3))
        first = len(out)
        engine_call(s, filt, 'true', grouped=True, by=True)
        out[first:] = ['\t' + line for line in out[first:]]
        w('\t\tRETURN;')
        w('\tEND IF;')
    # (a source without text keys has no "by": all its keys in one group)
    engine_call(s, filt, 'true', grouped=True)
    w('END;')
    w('$fn$;')
    w()
    grants(name, ', '.join(sig))


def gen_keyed(s):
    gen_sums(s)
    name = fn_name(s)
    keys = s['keys']
    filt = s['filters']
    params = ['from_ts timestamptz', 'to_ts timestamptz'] + \
        ['for_%s %s DEFAULT NULL' % (f, FILTER_TYPES[f]) for f in filt] + \
        ['changed_only boolean DEFAULT false']
    res = [('interval_start', 'timestamptz'), ('interval_end', 'timestamptz'), ('seconds', 'float8')] + \
        keys + out_columns(s)
    s['sig'] = ', '.join(['timestamptz', 'timestamptz'] + [FILTER_TYPES[f] for f in filt] + ['boolean'])
    header(s, name, params, res, engine=True)
    checks(s, name, 3)
    engine_call(s, filt, '$%d' % (len(filt) + 3))
    w('END;')
    w('$fn$;')
    w()
    grants(name, s['sig'])


def grants(name, sig):
    w("REVOKE ALL ON FUNCTION chronicle.%s(%s) FROM PUBLIC;" % (name, sig))
    w("GRANT EXECUTE ON FUNCTION chronicle.%s(%s) TO pg_monitor, pg_read_all_stats;" % (name, sig))
    w()


def gen_single(s):
    name = fn_name(s)
    params = ['from_ts timestamptz', 'to_ts timestamptz']
    res = [('interval_start', 'timestamptz'), ('interval_end', 'timestamptz'), ('seconds', 'float8')] + \
        out_columns(s)
    s['sig'] = 'timestamptz, timestamptz'
    header(s, name, params, res, engine=True)
    checks(s, name, 3)
    engine_call(s, [], 'false')
    w('END;')
    w('$fn$;')
    w()
    grants(name, s['sig'])


def gen_ends_helper(s):
    """_<fn>_ends(from, to): per key and segment of the window, the baseline
    row (latest at or before the segment's first interval start, else the
    key's first row) and the last row, whether a reset lies between, and
    how many of the segment's intervals in the window the key counts in
    (from its first row in the segment on: a key born or first seen in the
    window is not counted in the intervals before it, as <fn>_deltas()
    gives it no row there).  Born at zero: a key's first row after the
    segment's first keyframe with rows of the table (as the engine finds
    it) has a baseline of zero, and the interval it ends counts.
    Computed by the engine (chronicle._ends(), src/deltas.c) in its one
    time-ordered read from the keyframe before the window, which holds
    every key."""
    kcols = [k for k, _ in s['keys']]
    attrs = [c for c, k in s['cols'] if k == 'a']
    counters = [c for c, k in s['cols'] if k in 'ct']
    kinds = ''.join(k for c, k in s['cols'] if k in 'ct')
    b = s.get('bytes', {})
    name = '_%s_ends' % s['fn']
    res = s['keys'] + [(a, attr_type(s, a)) for a in attrs] + \
        [('segment', 'timestamptz'), ('reset', 'boolean'), ('intervals', 'bigint')]
    for c, k in s['cols']:
        if k in 'ct':
            res += [('b_' + c, coltype(k)), ('l_' + c, coltype(k))]
    header(s, name, ['from_ts timestamptz', 'to_ts timestamptz'], res, engine=True)
    born = s.get('born_at_zero', False)
    w('\tRETURN QUERY')
    w("\tSELECT * FROM chronicle._ends('chronicle.%s'::regclass, $1, $2," % s['table'])
    w('\t\tkeys => %s,' % sql_array(kcols))
    w('\t\tvals => %s,' % sql_array(counters))
    w("\t\tkinds => '%s'," % kinds)
    w('\t\tattrs => %s,' % sql_array(attrs))
    w('\t\treset_col => %s,' % ("'%s'" % s['reset'] if s['reset'] else 'NULL'))
    w('\t\tbytes_ops => %s,' % sql_array([b.get(v) for v in counters]))
    w('\t\tbytes_unit => %s,' % ("'op_bytes'" if b else 'NULL'))
    w('\t\tper_op => ARRAY[]::text[], filter_cols => ARRAY[]::text[], filter_vals => ARRAY[]::text[],')
    w('\t\tchanged_only => true, born_at_zero => %s)' % ('true' if born else 'false'))
    w('\t  AS d(%s);' % ', '.join('%s %s' % c for c in res))
    w('END;')
    w('$fn$;')
    w()
    w("REVOKE ALL ON FUNCTION chronicle.%s(timestamptz, timestamptz) FROM PUBLIC;" % name)
    w("GRANT EXECUTE ON FUNCTION chronicle.%s(timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;" % name)
    w()


def gen_totals(s):
    """<fn>_totals(from, to, filters): the sum of the per-interval deltas per
    key, with rates over the window's recorded seconds; and the run variant.
    intervals: a keyed source's key counts in the window's intervals from
    its first row in each segment on (the engine's _ends() says how many),
    a single-row source's row in every interval of the window."""
    if all(k == 'g' for _, k in s['cols']):
        return
    name = fn_name(s)
    tname = s['fn'] + '_totals'
    kcols = [k for k, _ in s['keys']]
    attrs = [c for c, k in s['cols'] if k == 'a']
    counters = [(c, k) for c, k in s['cols'] if k in 'ct']
    filt = s['filters']
    params = ['from_ts timestamptz', 'to_ts timestamptz'] + \
        ['for_%s %s DEFAULT NULL' % (f, FILTER_TYPES[f]) for f in filt]
    res = [('window_start', 'timestamptz'), ('window_end', 'timestamptz'), ('seconds', 'float8'),
           ('intervals', 'bigint')] + s['keys'] + [(a, attr_type(s, a)) for a in attrs] + \
        [('resets', 'bigint')]
    for c, k in counters:
        res += [(c, 'numeric' if k == 'c' else 'float8'), (c + '_per_s', 'float8')]
    for nm, t, c in s['per_op']:
        res.append((nm, 'float8'))
    sig = ', '.join(['timestamptz', 'timestamptz'] + [FILTER_TYPES[f] for f in filt])
    if kcols:
        gen_ends_helper(s)
    header(s, tname, params, res,
           'DECLARE\n\tsecs float8;\n\tn bigint;\n\tws timestamptz;\n\twe timestamptz;\n' if kcols else '')
    checks(s, tname, 3)
    if kcols:
        w('\tSELECT * INTO secs, n, ws, we FROM chronicle._window($1, $2);')
    args = ', '.join(['$1', '$2'] + ['$%d' % (i + 3) for i in range(len(filt))])
    if kcols:
        args += ', changed_only => true'
        ends = '_%s_ends' % s['fn']
        kf = ''.join('\n\t   AND ($%d IS NULL OR e.%s = $%d)' % (i + 3, f, i + 3) for i, f in enumerate(filt))
        w('\t-- Without a reset in the window, the deltas of a key telescope: its')
        w('\t-- total is its last value minus its baseline in each segment, found')
        w('\t-- in one time-ordered read instead of differencing every interval.')
        w('\tRETURN QUERY')
        w('\tWITH e AS MATERIALIZED (')
        w('\t\tSELECT * FROM chronicle.%s($1, $2) e' % ends)
        w('\t\t WHERE true%s' % kf.replace('\n\t', '\n\t\t'))
        w('\t)')
        w('\tSELECT ws, we, secs, sum(e.intervals)::bigint, %s,' % sel('e', kcols))
        for a in attrs:
            w('\t       max(e.%s),' % a)
        w('\t       0::bigint,')
        items = []
        for c, k in counters:
            d = delta_expr(s, c, 'e_l', 'e_b').replace('e_l.', 'e.l_').replace('e_b.', 'e.b_')
            d = d.replace('e.l_op_bytes', 'e.op_bytes')
            # a cell the view shows as NULL (untracked) has a NULL total
            items.append('sum(%s)%s' % (d, '::numeric' if k == 'c' else ''))
            items.append('sum(%s)::float8 / secs' % d)
        for nm, t, c in s['per_op']:
            items.append('sum(e.l_%s - e.b_%s)::float8 / nullif(sum(e.l_%s - e.b_%s), 0)' % (t, t, c, c))
        w('\t       %s' % ',\n\t       '.join(items))
        w('\t  FROM e')
        w('\t WHERE NOT EXISTS (SELECT FROM e r WHERE r.reset)')
        w('\t GROUP BY %s' % sel('e', kcols))
        w('\t ORDER BY %s;' % sel('e', kcols))
        w('\tIF FOUND THEN')
        w('\t\tRETURN;')
        w('\tEND IF;')
        w('\tRETURN QUERY')
        w('\tSELECT ws, we, secs, max(k.intervals), %s,' % sel('k', kcols))
        for a in attrs:
            w('\t       coalesce(max(d.%s), max(k.%s)),' % (a, a))
        w('\t       count(*) FILTER (WHERE d.reset),')
        items = []
        for c, k in counters:
            # no delta (no interval, or only resets): 0, or NULL for a cell
            # the view shows as NULL (the key's row minus itself)
            z = 'max(%s)' % delta_expr(s, c, 'k', 'k')
            items.append('coalesce(sum(d.%s), %s)%s' % (c, z, '::numeric' if k == 'c' else ''))
            items.append('coalesce(sum(d.%s), %s)::float8 / secs' % (c, z))
        for nm, t, c in s['per_op']:
            items.append('sum(d.%s)::float8 / nullif(sum(d.%s), 0)' % (t, c))
        w('\t       %s' % ',\n\t       '.join(items))
        # every key of the window, with its latest attributes (and its
        # cells' NULLs: a cell the view shows as NULL has a NULL total)
        w('\t  FROM (SELECT DISTINCT ON (%s) %s%s,' % (sel('kk', kcols), sel('kk', kcols),
                                                   ''.join(', kk.%s' % a for a in attrs)
                                                   + ''.join(', kk.l_%s AS %s' % (c, c) for c, _ in counters)))
        # the intervals it counts in, over every segment of the window
        w('\t               sum(kk.intervals) OVER (PARTITION BY %s)::bigint AS intervals' % sel('kk', kcols))
        w('\t          FROM chronicle.%s($1, $2) kk' % ends)
        w('\t         WHERE true%s' % ''.join('\n\t           AND ($%d IS NULL OR kk.%s = $%d)' % (i + 3, f, i + 3)
                                            for i, f in enumerate(filt)))
        w('\t         ORDER BY %s, kk.segment DESC) k' % sel('kk', kcols))
        w('\t  LEFT JOIN chronicle.%s(%s) d' % (name, args))
        w('\t    ON %s' % ' AND '.join('d.%s = k.%s' % (kk, kk) for kk in kcols))
        w('\t GROUP BY %s' % sel('k', kcols))
        w('\t ORDER BY %s;' % sel('k', kcols))
    else:
        # The per-interval rows of a single-row source are one per interval
        # (the engine's cost): summing them is the exact, reset-aware total,
        # and they carry the window's intervals too.
        w('\tRETURN QUERY')
        w('\tSELECT min(d.interval_start), max(d.interval_end), sum(d.seconds), count(*),')
        w('\t       count(*) FILTER (WHERE d.reset),')
        items = []
        for c, k in counters:
            items.append('sum(d.%s)%s' % (c, '::numeric' if k == 'c' else ''))
            items.append('sum(d.%s)::float8 / sum(d.seconds)' % c)
        for nm, t, c in s['per_op']:
            items.append('sum(d.%s)::float8 / nullif(sum(d.%s), 0)' % (t, c))
        w('\t       %s' % ',\n\t       '.join(items))
        w('\t  FROM chronicle.%s(%s) d' % (name, args))
        w('\t HAVING count(*) > 0;')
    w('END;')
    w('$fn$;')
    w()
    grants(tname, sig)
    # run variant
    rname = s['fn'] + '_run_totals'
    rparams = ['run text'] + ['for_%s %s DEFAULT NULL' % (f, FILTER_TYPES[f]) for f in filt]
    rsig = ', '.join(['text'] + [FILTER_TYPES[f] for f in filt])
    w('CREATE FUNCTION chronicle.%s(%s)' % (rname, ', '.join(rparams)))
    w('RETURNS TABLE (%s)' % ', '.join('%s %s' % c for c in res))
    w('LANGUAGE sql STABLE')
    w('SET search_path = pg_catalog, pg_temp')
    w('AS $fn$')
    w('\tSELECT t.* FROM chronicle.run_window($1) r,')
    w('\t       chronicle.%s(%s) t' % (tname, ', '.join(['r.run_from', 'r.run_to'] + ['$%d' % (i + 2) for i in range(len(filt))])))
    w('$fn$;')
    w()
    grants(rname, rsig)


def metrics(s):
    name = fn_name(s)
    keyed = bool(s['keys'])
    filt = 'ARRAY[%s]::text[]' % ', '.join("'%s'" % f for f in s['filters'])
    rows = []
    for c, k in s['cols']:
        if k in 'ct':
            unit = 'ms/s' if k == 't' else ('bytes/s' if 'bytes' in c else '1/s')
            rows.append("('%s.%s_per_s', '%s', '%s', %s, 'rate', '%s', NULL, %s, '%s')"
                        % (s['name'], c, s['name'], name, keyed, c, filt, unit))
        elif k == 'g':
            rows.append("('%s.%s', '%s', '%s', %s, 'gauge', '%s', NULL, %s, '%s')"
                        % (s['name'], c, s['name'], name, keyed, c, filt,
                           'kB' if s['name'] == 'os_memory' else 'buffers'))
    for nm, t, c in s['per_op']:
        rows.append("('%s.%s', '%s', '%s', %s, 'per_op', '%s', '%s', %s, 'ms')"
                    % (s['name'], nm, s['name'], name, keyed, t, c, filt))
    return rows


def main():
    w('-- Generated by tools/gen_deltas.py: do not edit, edit the generator.')
    w('-- Per-interval deltas and rates (<source>_deltas), values of gauge-only')
    w('-- sources (buffers_values), totals over a window (<source>_totals) and over')
    w('-- a run (<source>_run_totals) for every source; see the generator for the')
    w('-- method (reset-aware, sparse rows, never across segments).')
    w()
    rows = []
    for s in SOURCES:
        w('-- ' + '-' * 70)
        w('-- %s (chronicle.%s)' % (s['name'], s['table']))
        w()
        if s['keys']:
            gen_keyed(s)
        else:
            gen_single(s)
        gen_totals(s)
        rows += metrics(s)
    w('INSERT INTO chronicle.metric (metric, source, func, keyed, kind, col, col2, filters, unit) VALUES')
    w('\t' + ',\n\t'.join(rows) + ';')
    print('\n'.join(out))


if __name__ == '__main__':
    main()
