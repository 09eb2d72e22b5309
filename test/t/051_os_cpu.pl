# The os_cpu source (/proc/stat) against an independent reference: this
# script reads /proc/stat itself, about 100 times a second, while the worker
# records every 200 ms and a backend spins in a 3 s busy loop.
#
# Bracketing, no tolerance.  A snapshot's ts is taken before its sources
# are read and duration_ms after (src/collector.c), so its reading of
# /proc/stat lies in [ts, ts + duration_ms]; each reading of the script lies
# between two clock readings t0 and t1 of its own (the same wall clock).
# The counters of /proc/stat only grow (iowait aside: see below), so every
# counter the worker recorded lies between the script's last reading with
# t1 <= ts and its first with t0 >= ts + duration_ms, exactly: the modes in
# milliseconds (ticks * 1000 / USER_HZ, computed here from the script's
# ticks), ctxt and processes.  Likewise the totals over a window of
# snapshots around the busy loop, os_cpu_totals(A, B): the extension's
# window lies inside the script's outer readings (the last before A, the
# first after B) and contains its inner ones (the first after A, the last
# before B), so each total lies between the inner and the outer difference.
# cpus is the number of "cpuN" lines and boot_time btime, as the script
# reads them.  iowait is left out of the brackets if the script saw it go
# backwards (the kernel documents that it may: source_os_cpu.c).
#
# Sums, with a tolerance.  The modes (user .. steal; guest and guest_nice
# are inside user and nice) of the window add up to about cpus * 1000 ms
# per second: 10 %.  Why so much: the kernel accounts busy time by sampling
# its timer tick and idle time by the clock, so a tick a virtual CPU misses
# while its host runs something else (without steal accounting), or a
# busy period between two ticks, is time no mode gets; on the 2-vCPU VM
# this was written on the modes of 3 s windows summed to 95.8 % - 100.0 %
# of 2000 ms/s while the machine idled and 99.5 % - 100.7 % with a CPU busy.
# On top, USER_HZ truncation (each mode's total is rounded down to 10 ms at
# each end: under 80 ms over the 8 modes) and the ends of the window (the
# reads lie up to duration_ms after ts).  A wrong unit (seconds, ticks) or
# a mode lost or counted twice (idle, or guest added to user) is off by far
# more.  And the busy loop shows: the busy modes and steal of the window
# hold at least 80 % of its seconds (one CPU is never idle while a runnable
# loop spins; the rest for the tick accounting above).  procs_running, a
# count of an instant, cannot be bracketed: within the loop it is at least
# 2 (the loop and the collector, which runs while it reads) in more than
# half of the snapshots (the kernel sums the run queues without a lock, so
# a task moved from one to another as they are summed is missed, and a CPU
# quota of a container takes a throttled task off its run queue).
#
# Then captured files through chronicle.proc_root, from SQL snapshots with
# the worker switched off: test/data/proc/stat gives exactly the values of
# the file, typed here; a copy with known increments gives exactly those
# deltas and rates in os_cpu_deltas() and os_cpu_totals(); the layout of
# Linux 2.6.0-2.6.10 (7 modes) and a file without procs_blocked give NULLs;
# no stat file: the source is not available, no error; malformed files
# (empty, no aggregate line, a letter, a sign, an overflow, 3 fields,
# garbage, a directory) each give a counted error with its message and no
# row, while the snapshot records the other sources; then the worker on a
# malformed file counts errors and goes on recording, and records the CPU
# again once proc_root is reset.  The server never restarts.
use strict;
use warnings FATAL => 'all';
use Cwd qw(getcwd);
use File::Path qw(make_path);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use JSON::PP;
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgChronicle::TestNode qw(chronicle_node more_worker_snapshots poll_until);
use Time::HiRes qw(time usleep);

plan skip_all => 'no readable /proc/stat (not Linux)' unless -r '/proc/stat';

my $srcdir = getcwd();    # prove runs in the source tree
my $captured = "$srcdir/test/data/proc";
die "no $captured/stat: run from the top of the tree" unless -f "$captured/stat";
my $hz = POSIX::sysconf(POSIX::_SC_CLK_TCK());
die "no USER_HZ" unless $hz && $hz > 0;

my @modes = qw(user nice system idle iowait irq softirq steal guest guest_nice);
my @mode_cols = map { "${_}_ms" } @modes;
my @counter_cols = (@mode_cols, 'ctxt', 'processes');

# One reading of a /proc/stat file: its "cpu" line's ticks per mode (undef
# where the line ends), the number of "cpuN" lines, the "name value" lines,
# and the clock before and after.
sub read_stat
{
	my ($path) = @_;
	my $t0 = time();
	open my $fh, '<', $path or die "open $path: $!";
	my @lines = <$fh>;
	close $fh;
	my $t1 = time();
	my %r = (t0 => $t0, t1 => $t1, cpus => 0);
	for (@lines)
	{
		my @f = split ' ';
		next unless @f;
		if ($f[0] eq 'cpu') { @r{@modes} = @f[ 1 .. 10 ]; }
		elsif ($f[0] =~ /^cpu\d+$/) { $r{cpus}++; }
		elsif ($f[0] =~ /^(ctxt|processes|procs_running|procs_blocked|btime)$/) { $r{ $f[0] } = $f[1]; }
	}
	return \%r;
}

# A reading's value of a column of os_cpu: milliseconds for a mode.
sub ref_value
{
	my ($r, $col) = @_;
	return $col =~ /^(.*)_ms$/ ? $r->{$1} * 1000 / $hz : $r->{$col};
}

my $node = chronicle_node('os_cpu', conf => q{
chronicle.snapshot_interval = '200ms'
});
sub sql { return $node->safe_psql('postgres', $_[0]); }
sub jquery { return decode_json(sql($_[0]) || 'null'); }
my $postmaster_start = sql('SELECT pg_postmaster_start_time()');

poll_until($node, 'postgres',
	q{SELECT count(*) >= 3 FROM chronicle.os_cpu_history},
	'the worker records os_cpu');
sql('CREATE TABLE busy (started float8, ended float8)');

# --- The reference around a busy loop -------------------------------------

my @ref;
sub read_for
{
	my ($seconds) = @_;
	my $until = time() + $seconds;
	while (time() < $until)
	{
		push @ref, read_stat('/proc/stat');
		usleep(10_000);
	}
}
read_for(0.8);
my $load = $node->background_psql('postgres');
$load->query_until(qr/busy/, q{\echo busy
DO $$
DECLARE
	s timestamptz := clock_timestamp();
BEGIN
	WHILE clock_timestamp() < s + interval '3 s' LOOP
	END LOOP;
	INSERT INTO busy VALUES (extract(epoch FROM s), extract(epoch FROM clock_timestamp()));
END
$$;
});
read_for(3.3);
$load->query_safe('SELECT 1');    # the loop is over
$load->quit;
read_for(0.8);
my ($busy_from, $busy_to) = split /\|/, sql('SELECT started, ended FROM busy');
note(sprintf('%d readings of /proc/stat over %.1f s; the busy loop ran %.3f s',
		scalar(@ref), $ref[-1]{t1} - $ref[0]{t0}, $busy_to - $busy_from));

my $iowait_monotonic = 1;
for my $i (1 .. $#ref)
{
	$iowait_monotonic = 0 if defined $ref[$i]{iowait} && $ref[$i]{iowait} < $ref[ $i - 1 ]{iowait};
}
note('the reference saw iowait go backwards: iowait is not bracketed') unless $iowait_monotonic;
my @bracketed = grep { $_ ne 'iowait_ms' || $iowait_monotonic } @counter_cols;

# The worker's snapshots within the readings, each with the values of
# os_cpu at it (its latest row in the segment: an unchanged row is not
# written).
my $snaps = jquery(sprintf(q{
	SELECT json_agg(x ORDER BY x.epoch) FROM (
		SELECT s.ts::text AS ts, extract(epoch FROM s.ts)::float8 AS epoch, s.duration_ms,
		       extract(epoch FROM h.boot_time)::bigint AS btime, %s
		  FROM chronicle.snapshot s
		 CROSS JOIN LATERAL (SELECT * FROM chronicle.os_cpu_history h
		                      WHERE h.ts <= s.ts AND h.ts >= s.segment
		                      ORDER BY h.ts DESC LIMIT 1) h
		 WHERE s.collector = 'worker' AND s.ts > to_timestamp(%.6f)
		   AND s.ts < to_timestamp(%.6f)) x},
	join(', ', map { "h.$_" } @counter_cols, qw(procs_running procs_blocked cpus)),
	$ref[0]{t1}, $ref[-1]{t0}));

# The readings around [ts, ts + duration_ms].
sub bracket
{
	my ($s) = @_;
	my $end = $s->{epoch} + $s->{duration_ms} / 1000;
	my ($lo, $hi);
	for my $r (@ref)
	{
		$lo = $r if $r->{t1} <= $s->{epoch};
		if ($r->{t0} >= $end) { $hi = $r; last; }
	}
	return ($lo, $hi);
}

my (@bad, @checked, $widest);
$widest = 0;
for my $s (@$snaps)
{
	my ($lo, $hi) = bracket($s);
	next unless $lo && $hi;
	push @checked, $s;
	$widest = $hi->{t0} - $lo->{t1} if $hi->{t0} - $lo->{t1} > $widest;
	for my $c (@bracketed)
	{
		my ($l, $v, $h) = (ref_value($lo, $c), $s->{$c}, ref_value($hi, $c));
		push @bad, "$s->{ts} $c: " . join(' <= ', map { $_ // 'NULL' } $l, $v, $h)
		  unless defined $v && $l <= $v + 1e-6 && $v <= $h + 1e-6;
	}
	push @bad, "$s->{ts} cpus $s->{cpus}, the reference $lo->{cpus} and $hi->{cpus}"
	  unless $s->{cpus} == $lo->{cpus} && $s->{cpus} == $hi->{cpus};
	push @bad, "$s->{ts} boot_time $s->{btime}, the reference btime $lo->{btime}"
	  unless defined $s->{btime} && $s->{btime} == $lo->{btime};
	push @bad, "$s->{ts} procs_running $s->{procs_running}, procs_blocked $s->{procs_blocked}"
	  unless $s->{procs_running} >= 1 && $s->{procs_blocked} >= 0;
}
cmp_ok(scalar(@checked), '>=', 15,
	sprintf('%d worker snapshots between two readings of the reference (widest bracket %.0f ms)',
		scalar(@checked), 1000 * $widest));
is(join("\n", @bad), '',
	'every recorded counter between the readings around its snapshot; cpus and boot_time as read');

my @in_loop = grep { $_->{epoch} >= $busy_from && $_->{epoch} + $_->{duration_ms} / 1000 <= $busy_to } @checked;
cmp_ok(scalar(@in_loop), '>=', 5, scalar(@in_loop) . ' snapshots within the busy loop');
my $two = grep { $_->{procs_running} >= 2 } @in_loop;
cmp_ok($two, '>', @in_loop / 2,
	"within the busy loop procs_running >= 2 (the loop and the collector) in $two of "
	  . scalar(@in_loop) . ' snapshots');

# The window of snapshots around the loop: the totals bracketed by the
# reference's inner and outer differences.
my ($sa) = reverse grep { $_->{epoch} + $_->{duration_ms} / 1000 <= $busy_from } @checked;
my ($sb) = grep { $_->{epoch} >= $busy_to } @checked;
die "stopping: no snapshot before or after the loop between readings\n" unless $sa && $sb;
my ($lo_a, $hi_a) = bracket($sa);
my ($lo_b, $hi_b) = bracket($sb);
my $tot = jquery(qq{
	SELECT row_to_json(t) FROM chronicle.os_cpu_totals('$sa->{ts}', '$sb->{ts}') t});
my $nintervals = sql(qq{
	SELECT count(*) FROM chronicle.snapshot WHERE ts > '$sa->{ts}' AND ts <= '$sb->{ts}'});
is("$tot->{intervals} $tot->{resets}", "$nintervals 0",
	"os_cpu_totals() over the loop's window: $nintervals intervals, no reset");
@bad = ();
for my $c (@bracketed)
{
	my $inner = ref_value($lo_b, $c) - ref_value($hi_a, $c);
	my $outer = ref_value($hi_b, $c) - ref_value($lo_a, $c);
	my $v = $tot->{$c};
	push @bad, "$c: " . join(' <= ', map { $_ // 'NULL' } $inner, $v, $outer)
	  unless defined $v && $inner <= $v + 1e-6 && $v <= $outer + 1e-6;
}
is(join("\n", @bad), '',
	'os_cpu_totals(): every total between the reference\'s inner and outer differences');

my $cpus = $sb->{cpus};
my $mode_sum = 0;
$mode_sum += $tot->{$_} // 0 for map { "${_}_ms" } qw(user nice system idle iowait irq softirq steal);
my $ratio = $mode_sum / ($cpus * 1000 * $tot->{seconds});
ok(abs($ratio - 1) <= 0.10,
	sprintf('the modes sum to %.1f ms/s, %.1f %% of %d CPUs x 1000 ms/s (within 10 %%)',
		$mode_sum / $tot->{seconds}, 100 * $ratio, $cpus));
my $busy_ms = 0;
$busy_ms += $tot->{$_} // 0 for map { "${_}_ms" } qw(user nice system irq softirq steal);
cmp_ok($busy_ms, '>=', 0.8 * 1000 * ($busy_to - $busy_from),
	sprintf('the busy loop shows: %.0f ms busy (and stolen) in the window, %.3f s of loop', $busy_ms,
		$busy_to - $busy_from));
is(sql(qq{
	SELECT count(*) = $nintervals AND bool_and(NOT reset)
	       AND bool_and(abs(user_ms_per_s * seconds - user_ms) < 1e-6)
	       AND bool_and(procs_running >= 1 AND cpus = $cpus)
	  FROM chronicle.os_cpu_deltas('$sa->{ts}', '$sb->{ts}')}),
	't', 'os_cpu_deltas(): an interval per snapshot, rates over its seconds, the gauges');

# --- Captured files, the worker off ---------------------------------------

sql(q{ALTER SYSTEM SET chronicle.enabled = off; SELECT pg_reload_conf()});
poll_until($node, 'postgres', q{SELECT state LIKE 'disabled%' FROM chronicle.status()},
	'the recording is switched off');

my $tmp = PostgreSQL::Test::Utils::tempdir;
# A directory holding a stat file of the text given (undef: none).
sub proc_dir
{
	my ($name, $text) = @_;
	make_path("$tmp/$name");
	if (defined $text)
	{
		open my $fh, '>', "$tmp/$name/stat" or die "write $name/stat: $!";
		print $fh $text;
		close $fh;
	}
	return "$tmp/$name";
}
# A snapshot from SQL reading /proc from $root; its ts.
sub snap
{
	my ($root) = @_;
	return sql(qq{SET chronicle.proc_root = '$root'; SELECT chronicle.snapshot()});
}
my $cols = join(', ', @counter_cols, qw(procs_running procs_blocked cpus));

# test/data/proc/stat as read on a Linux 6.18 VM with USER_HZ 100: its
# values, typed here from the file.
my @cap = (1329906, 61289, 384033, 1239421, 10251, 0, 1640, 1944, 0, 0);
my $ts = snap($captured);
is(sql(qq{SELECT concat_ws(' ', $cols, extract(epoch FROM boot_time)::bigint) FROM chronicle.os_cpu_history WHERE ts = '$ts'}),
	sql('SELECT concat_ws(\' \', ' . join(', ', map { "${_}::float8 * 1000 / $hz" } @cap)
		  . ", 95987149, 360051, 11, 0, 2, 1795683630)"),
	'test/data/proc/stat: every value of the file (modes in ms: ticks * 1000 / USER_HZ)');

# The same file with known increments: the deltas and rates.
my @inc = (150, 0, 40, 200, 3, 0, 1, 6, 0, 0);
my $text = slurp_file("$captured/stat");
my @f = split ' ', ($text =~ /^cpu +(.*)$/m)[0];
my $later = $text;
my $newcpu = 'cpu  ' . join(' ', map { $f[$_] + $inc[$_] } 0 .. 9);
$later =~ s/^cpu .*$/$newcpu/m;
$later =~ s/^ctxt (\d+)$/'ctxt ' . ($1 + 1234)/me;
$later =~ s/^processes (\d+)$/'processes ' . ($1 + 17)/me;
$later =~ s/^procs_running \d+$/procs_running 2/m;
$later =~ s/^procs_blocked \d+$/procs_blocked 1/m;
my $ts1 = snap($captured);
my $ts2 = snap(proc_dir('later', $later));
my $expect = join(', ', (map { "$inc[$_]::float8 * 1000 / $hz" } 0 .. 9), 1234, 17);
is(sql(qq{
	SELECT concat_ws(' ', count(*), bool_and(interval_start = '$ts1'), bool_and(NOT reset),
	       bool_and(ROW($cols) IS NOT DISTINCT FROM ROW($expect, 2, 1, 2)),
	       bool_and(abs(ctxt_per_s - 1234 / seconds) < 1e-9 * ctxt_per_s
	                AND abs(idle_ms_per_s - idle_ms / seconds) < 1e-9 * idle_ms_per_s))
	  FROM chronicle.os_cpu_deltas('$ts1', '$ts2')}),
	'1 t t t t', 'os_cpu_deltas() between the file and a copy with known increments: those deltas and rates');
is(sql(qq{
	SELECT ROW(intervals, resets, } . join(', ', @counter_cols) . qq{)
	       IS NOT DISTINCT FROM ROW(1, 0, $expect)
	  FROM chronicle.os_cpu_totals('$ts1', '$ts2')}),
	't', 'os_cpu_totals() of that interval: the increments');

# Older kernels: 7 modes (Linux 2.6.0-2.6.10), a file without procs_blocked.
my $old = $text;
$old =~ s/^cpu .*$/cpu  1 2 3 4 5 6 7/m;
$old =~ s/^procs_blocked.*\n//m;
$ts = snap(proc_dir('old', $old));
is(sql(qq{SELECT concat_ws(' ', user_ms * $hz / 1000, softirq_ms * $hz / 1000,
	                       steal_ms IS NULL, guest_ms IS NULL, guest_nice_ms IS NULL, procs_blocked IS NULL, procs_running)
	        FROM chronicle.os_cpu_history WHERE ts = '$ts'}),
	'1 7 t t t t 11', 'the layout of Linux 2.6.0-2.6.10 and no procs_blocked line: NULLs');

# No stat file: not available, no error.
$ts = snap(proc_dir('none', undef));
is(sql(qq{SELECT concat_ws(' ', s.errors, (SELECT count(*) FROM chronicle.os_cpu_history h WHERE h.ts = s.ts))
	        FROM chronicle.snapshot s WHERE s.ts = '$ts'}),
	'0 0', 'no stat file: no row, no error');

# Malformed files: a counted error, no row, the other sources recorded.
my $garbage = join('', map { chr((($_ * 7919) % 251) + 1) } 1 .. 3000);
$garbage =~ s/cpu//g;
my @malformed = (
	[ 'empty', '', qr/no "cpu" line/ ],
	[ 'no aggregate line', join('', grep { !/^cpu / } split /^/, $text), qr/no "cpu" line/ ],
	[ 'a letter', $text =~ s/^cpu +(\d+) (\d)/cpu  $1 x$2/mr, qr/field 2 is not an unsigned number/ ],
	[ 'a sign', $text =~ s/^cpu +/cpu  -/mr, qr/field 1 is not an unsigned number/ ],
	[ 'an overflow', $text =~ s/^cpu +\d+/cpu  99999999999999999999999/mr, qr/field 1 is not an unsigned number/ ],
	[ 'three fields', $text =~ s/^cpu .*$/cpu  1 2 3/mr, qr/3 fields, fewer than 4/ ],
	[ 'garbage', $garbage, qr/no "cpu" line/ ],
	[ 'a directory', undef, qr/no "cpu" line/ ]);
my $i = 0;
for my $m (@malformed)
{
	my ($name, $content, $msg) = @$m;
	my $dir = proc_dir('bad' . $i++, $content);
	make_path("$dir/stat") unless defined $content;
	my $errors = sql(q{SELECT errors FROM chronicle.source_status() WHERE source = 'os_cpu'});
	$ts = snap($dir);
	is(sql(qq{
		SELECT concat_ws(' ', s.errors,
		       (SELECT count(*) FROM chronicle.os_cpu_history h WHERE h.ts = s.ts),
		       (SELECT count(*) FROM chronicle.wal_history w WHERE w.ts = s.ts),
		       (SELECT errors - $errors FROM chronicle.source_status() WHERE source = 'os_cpu'))
		  FROM chronicle.snapshot s WHERE s.ts = '$ts'}),
		'1 0 1 1', "malformed /proc/stat ($name): one error counted, no os_cpu row, wal recorded");
	like(sql(q{SELECT last_error FROM chronicle.source_status() WHERE source = 'os_cpu'}), $msg,
		"malformed /proc/stat ($name): the error says why");
}
$ts = snap($captured);
is(sql(qq{SELECT s.errors || ' ' || count(h.*) FROM chronicle.snapshot s
	        LEFT JOIN chronicle.os_cpu_history h ON h.ts = s.ts WHERE s.ts = '$ts' GROUP BY s.errors}),
	'0 1', 'the captured file again: recorded, no error');

# The worker on a malformed file: errors counted, recording goes on; then
# the CPU recorded again.
my $bad = proc_dir('worker_bad', 'cpu  1 2 x');
sql(qq{ALTER SYSTEM SET chronicle.proc_root = '$bad'; ALTER SYSTEM RESET chronicle.enabled;
	SELECT pg_reload_conf()});
my $errors = sql(q{SELECT errors FROM chronicle.source_status() WHERE source = 'os_cpu'});
poll_until($node, 'postgres',
	qq{SELECT errors >= $errors + 2 FROM chronicle.source_status() WHERE source = 'os_cpu'},
	'the worker counts the errors of a malformed /proc/stat');
my $since = sql(q{SELECT max(ts) FROM chronicle.snapshot});
more_worker_snapshots($node, 5, 'the worker goes on recording');
is(sql(qq{
	SELECT concat_ws(' ', count(*) >= 5, bool_and(s.errors >= 1),
	       count(*) FILTER (WHERE EXISTS (SELECT FROM chronicle.os_cpu_history h WHERE h.ts = s.ts)),
	       count(*) FILTER (WHERE EXISTS (SELECT FROM chronicle.wal_history w WHERE w.ts = s.ts)) > 0)
	  FROM chronicle.snapshot s WHERE s.collector = 'worker' AND s.ts > '$since'}),
	't t 0 t', 'meanwhile every snapshot counts the error (or the back-off), none has os_cpu, the other sources are recorded');
sql(q{ALTER SYSTEM RESET chronicle.proc_root; SELECT pg_reload_conf()});
my $reset_at = sql('SELECT now()');
poll_until($node, 'postgres',
	qq{SELECT count(*) >= 2 FROM chronicle.os_cpu_history WHERE ts > '$reset_at'},
	'proc_root reset: the worker records the CPU again');

is(sql('SELECT pg_postmaster_start_time()'), $postmaster_start, 'the server never restarted');

$node->stop;
done_testing();
