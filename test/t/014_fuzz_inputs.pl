# Bad input, fuzzed, at the three places the extension parses what it does
# not control: the /proc files of the OS sources (through chronicle.proc_root),
# pgbench's log lines (chronicle.load_pgbench_lines) and packed history
# values handed to chronicle._unpack().  Mutations of the
# captured files in test/data: truncated, overlong, binary, shuffled,
# numbers out of range.  Every call must end in success or in an error with
# a SQLSTATE other than XX000, never in a crash, and must lose nothing:
# the other sources still record, earlier loads stay.  The seed is printed;
# PG_CHRONICLE_FUZZ_SEED and PG_CHRONICLE_FUZZ_ROUNDS repeat or extend a run.
#
# one_version: the parsers fuzzed are the extension's own, alike on every version:
# tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node);
use File::Copy;
use File::Path qw(make_path remove_tree);

my $seed = $ENV{PG_CHRONICLE_FUZZ_SEED} // time;
my $rounds = $ENV{PG_CHRONICLE_FUZZ_ROUNDS} // 150;
srand($seed);
note "fuzz seed $seed, $rounds rounds per family";

my $node = chronicle_node('fuzz', conf => q{
chronicle.enabled = off
});
my $postmaster = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

my $srcdir = $ENV{PG_ABS_SRCDIR} // '.';
my $data = "$srcdir/test/data";
my %sqlstates;
my $calls = 0;
my @bad;

# call SQL: run it, classify the outcome; psql's verbose errors carry the SQLSTATE.
sub call
{
	my ($sql, $what) = @_;
	my ($stdout, $stderr) = ('', '');
	my $rc = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql",
		stdout => \$stdout, stderr => \$stderr, on_error_stop => 1);
	$calls++;
	my $state = 'ok';
	if ($rc != 0)
	{
		($state) = $stderr =~ /ERROR:\s+([0-9A-Z]{5}):/;
		$state //= 'none';
		push @bad, "$what: " . ($state eq 'none' ? "no SQLSTATE (rc $rc): $stderr" : "internal error: $stderr")
		  if $state eq 'none' || $state =~ /^XX/;
	}
	$sqlstates{$state}++;
	return ($state, $stdout);
}

sub slurp_bytes { my $f = shift; open my $h, '<:raw', $f or die "$f: $!"; local $/; my $c = <$h> // q{}; close $h; return $c; }
sub spit { my ($f, $c) = @_; open my $h, '>:raw', $f or die "$f: $!"; print $h $c; close $h; }

# One random mutation of a file's text.
sub mutate
{
	my $c = shift;
	my $kind = int(rand(9));
	my $len = length $c;
	if ($kind == 0) { return substr($c, 0, int(rand($len + 1))); }          # truncated
	if ($kind == 1) { return ''; }                                           # empty
	if ($kind == 2)
	{                                                                        # random bytes, NULs included
		my $n = 1 + int(rand(20));
		for (1 .. $n)
		{
			substr($c, int(rand($len || 1)), 1) = chr(int(rand(256))) if $len;
		}
		return $c;
	}
	if ($kind == 3)
	{                                                                        # an overlong line
		my $pos = int(rand($len + 1));
		return substr($c, 0, $pos) . ('9' x (1000 + int(rand(20000)))) . substr($c, $pos);
	}
	if ($kind == 4)
	{                                                                        # lines shuffled and repeated
		my @l = split /\n/, $c;
		return join("\n", map { $l[ int(rand(@l || 1)) ] // '' } 1 .. (2 * @l + 1)) . "\n";
	}
	if ($kind == 5)
	{                                                                        # numbers out of range
		my @big = ('99999999999999999999999999', '-1', '-9223372036854775809', '1e308', 'nan', '', '+', '0x10');
		$c =~ s/\b\d+\b/rand() < 0.3 ? $big[int(rand(@big))] : $&/ge;
		return $c;
	}
	if ($kind == 6) { return join('', map { chr(int(rand(256))) } 1 .. int(rand(4096))); } # garbage
	if ($kind == 7) { $c =~ s/[ \t]+/rand() < 0.5 ? '' : "\t\t"/ge; return $c; }         # separators
	return $c . "\n" x int(rand(3)) . "x:" x int(rand(100));                 # trailing junk
}

# --- /proc ---------------------------------------------------------------
my $root = $node->basedir . '/proc';
my @procfiles = qw(meminfo vmstat diskstats stat pressure/cpu pressure/io pressure/memory);
my %orig = map { $_ => slurp_bytes("$data/proc/$_") } @procfiles;
my $lost = 0;
for my $round (1 .. $rounds)
{
	remove_tree($root);
	make_path("$root/pressure");
	spit("$root/$_", $orig{$_}) for @procfiles;
	# One to three files mutated; sometimes a file is a directory or missing.
	for (1 .. 1 + int(rand(3)))
	{
		my $f = $procfiles[ int(rand(@procfiles)) ];
		my $r = rand();
		if ($r < 0.05) { unlink "$root/$f"; make_path("$root/$f"); }
		elsif ($r < 0.1) { unlink "$root/$f"; }
		elsif (-f "$root/$f") { spit("$root/$f", mutate(slurp_bytes("$root/$f"))); }
	}
	my ($state, $ts) = call(qq{
		SET chronicle.proc_root = '$root';
		SET chronicle.os_disks = 'vda=data+wal, sda=wal,sda1, nvme9n1=data';
		SELECT chronicle.snapshot();}, "/proc round $round");
	# A snapshot that went through recorded every other source.
	if ($state eq 'ok')
	{
		chomp $ts;
		$lost++ unless $node->safe_psql('postgres',
			"SELECT count(*) FROM chronicle.wal_history WHERE ts = '$ts'") eq '1';
	}
}
is($lost, 0, 'bad /proc files: every snapshot still recorded the other sources');
is($node->safe_psql('postgres', 'SELECT count(*) FROM chronicle.source_status() WHERE source LIKE $$os_%$$ AND errors > 0') >= 0 ? 1 : 0,
	1, 'source_status answers after the /proc rounds');

# A line as a field of COPY's text format (a NUL cannot be sent at all).
sub copy_text
{
	my $v = shift;
	$v =~ s/\0//g;
	$v =~ s/\\/\\\\/g;
	$v =~ s/\t/\\t/g;
	$v =~ s/\r/\\r/g;
	return $v;
}

# --- pgbench log lines ---------------------------------------------------
my @logs = qw(plain.1000 agg.5000 rate.2000 tries.3000 failed.6000 agg11.7000 ratetries.4000);
my %lines = map { $_ => slurp_bytes("$data/pgbench/$_") } @logs;
$node->safe_psql('postgres', q{
	SELECT chronicle.run_begin('fuzz-base');
	SELECT chronicle.run_end('fuzz-base');});
my ($base_state) = call(q{
	SELECT chronicle.pgbench_staging();
	COPY pg_temp.chronicle_pgbench_lines (file, line) FROM STDIN;
}
	  . join('', map { "plain.1000\t$_\n" } split /\n/, $lines{'plain.1000'}) . "\\.\n" . q{
	SELECT * FROM chronicle.load_pgbench_lines('fuzz-base');}, 'base load');
is($base_state, 'ok', 'an unmutated pgbench log loads');
my $kept = $node->safe_psql('postgres', 'SELECT count(*) FROM chronicle.app_transaction');
cmp_ok($kept, '>', 0, "the base load holds rows ($kept)");

for my $round (1 .. $rounds)
{
	my $log = $logs[ int(rand(@logs)) ];
	my $text = mutate($lines{$log});
	# COPY's text format: escape what would end a field or a row.
	my @rows = map { copy_text($_) } split /\n/, $text;
	my $label = "fuzz-$round";
	my @args = ("'$label'", "create_run => true");
	push @args, "format => '" . (qw(auto transaction aggregate))[ int(rand(3)) ] . "'" if rand() < 0.3;
	push @args, "aggregate_interval => " . (int(rand(5)) - 1) if rand() < 0.2;
	call(q{
		SELECT chronicle.pgbench_staging();
		COPY pg_temp.chronicle_pgbench_lines (file, line) FROM STDIN;
}
		  . join('', map { "$log\t$_\n" } @rows) . "\\.\n" . qq{
		SELECT * FROM chronicle.load_pgbench_lines(@{[ join(', ', @args) ]});}, "pgbench round $round ($log)");
}
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM chronicle.app_transaction t JOIN chronicle.run r USING (run_id)
	 WHERE r.label = 'fuzz-base'}), $kept, 'fuzzed loads left the earlier load untouched');

# --- packed history (chronicle._unpack) -----------------------------------
# The monitoring roles may call chronicle._unpack() on bytes of their own:
# valid packed values of every source (keyframes of chronicle.snapshot()),
# with bits flipped, bytes cut, inserted or replaced, and random bytes.
$node->safe_psql('postgres', 'SELECT chronicle.snapshot() FROM generate_series(1, 3)');
my %coldefs = map { split /\|/ } split /\n/, $node->safe_psql('postgres', q{
	SELECT source, string_agg(format('%I %s', column_name, column_type), ', ' ORDER BY ordinal)
	  FROM chronicle._source_columns() GROUP BY source});
my @packed;    # [source, hex]
for my $src (sort keys %coldefs)
{
	push @packed, map { [ $src, $_ ] } split /\n/, $node->safe_psql('postgres',
		qq{SELECT encode(h.$src, 'hex') FROM chronicle.history h WHERE h.$src IS NOT NULL ORDER BY ts DESC LIMIT 2});
}
cmp_ok(scalar(@packed), '>=', 10, scalar(@packed) . ' packed values of the sources to mutate');
my $unpacked_ok = 0;
for my $round (1 .. $rounds * 2)
{
	my ($src, $hex) = @{ $packed[ int(rand(@packed)) ] };
	my @b = map { hex } ($hex =~ /(..)/g);
	my $kind = int(rand(5));
	if ($kind == 0) { my $i = int(rand(@b)); $b[$i] ^= 1 << int(rand(8)); }
	elsif ($kind == 1) { splice(@b, int(rand(@b + 1))); }
	elsif ($kind == 2) { splice(@b, int(rand(@b + 1)), 0, map { int(rand(256)) } 1 .. 1 + int(rand(8))); }
	elsif ($kind == 3) { $b[ int(rand(@b)) ] = int(rand(256)) for 1 .. 1 + int(rand(4)); }
	else { @b = map { int(rand(256)) } 1 .. int(rand(64)); }
	my $bytes = join('', map { sprintf '%02x', $_ } @b);
	my ($state) = call(qq{SELECT count(*) FROM chronicle._unpack('$src', now(), '\\x$bytes') AS u($coldefs{$src});},
		"unpack round $round ($src, mutation $kind)");
	$unpacked_ok++ if $state eq 'ok';
}
note "mutated packed values: $unpacked_ok of " . ($rounds * 2) . ' still decoded (a flipped payload bit is a valid value)';

is(join("\n", @bad), '', "$calls calls: every failure has a SQLSTATE, none internal");
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $postmaster,
	'no crash restart during the fuzzing');
unlike(slurp_file($node->logfile), qr/terminated by signal|TRAP:|PANIC/, 'no crash in the log');
note "fuzzed inputs: $calls calls, outcomes by SQLSTATE: "
  . join(', ', map { "$_ $sqlstates{$_}" } sort keys %sqlstates);

$node->stop;
done_testing();
