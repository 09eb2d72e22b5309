# The environment a run keeps (src/environment.c) against an independent
# reading of the same files here, in Perl: /proc/cpuinfo, /proc/meminfo,
# uname, transparent huge pages, cpufreq governors, and for the data
# directory and pg_wal their device (stat, /sys/dev/block), queue settings
# and mount (/proc/self/mountinfo).  A key the machine does not have must be
# absent, not empty.  The settings a run keeps, those at their default
# included, against psql's SHOW.  compare_environment() and its errors.
#
# one_version: the environment is read from the OS, alike on every version:
# tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use Cwd qw(realpath);
use File::Basename qw(dirname basename);
use POSIX qw(uname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node);

my $node = chronicle_node('environment', conf => q{
chronicle.enabled = off
});
$node->safe_psql('postgres', 'CREATE ROLE r_monitor LOGIN IN ROLE pg_monitor');

# The environment of a run, flattened to dotted names.
sub flat
{
	my ($label) = @_;
	my %e = map { split /\|/, $_, 2 } split /\n/, $node->safe_psql('postgres', qq{
		WITH RECURSIVE f(k, v) AS (
			SELECT e.key, e.value FROM chronicle.run r, jsonb_each(r.environment) e WHERE r.label = '$label'
			UNION ALL
			SELECT f.k || '.' || e.key, e.value FROM f, jsonb_each(f.v) e WHERE jsonb_typeof(f.v) = 'object')
		SELECT k || '|' || (v #>> '{}') FROM f WHERE jsonb_typeof(v) <> 'object' ORDER BY k});
	return \%e;
}

$node->safe_psql('postgres', "SELECT chronicle.run_begin('super'); SELECT chronicle.run_end()");
my $env = flat('super');
note explain $env;

# --- the reference ----------------------------------------------------------

my %want;

sub slurp_line
{
	my ($path) = @_;
	open my $fh, '<', $path or return undef;
	my $l = <$fh>;
	return undef unless defined $l;
	chomp $l;
	return $l;
}

sub choice
{
	my ($l) = @_;
	return undef unless defined $l;
	return $1 if $l =~ /\[([^\]]*)\]/;
	return $l eq '' ? undef : $l;
}

# CPU: processors and the first model name (or ARM's Hardware).
if (open my $fh, '<', '/proc/cpuinfo')
{
	my ($n, $model) = (0, undef);
	while (<$fh>)
	{
		$n++ if /^processor\s*:/;
		$model //= $1 if /^(?:model name|Hardware)\s*:\s*(.*?)\s*$/;
	}
	$want{'cpu.count'} = $n if $n;
	$want{'cpu.model'} = $model if defined $model && $model ne '';
}
if (open my $fh, '<', '/proc/meminfo')
{
	while (<$fh>)
	{
		$want{'memory.total_kb'} = $1 if /^MemTotal:\s+(\d+)/;
		$want{'memory.hugepages_total'} = $1 if /^HugePages_Total:\s+(\d+)/;
		$want{'memory.hugepage_size_kb'} = $1 if /^Hugepagesize:\s+(\d+)/;
	}
}
my @u = uname();
@want{qw(kernel.sysname kernel.release kernel.version kernel.machine)} = @u[ 0, 2, 3, 4 ];
for my $k (qw(enabled defrag))
{
	my $v = choice(slurp_line("/sys/kernel/mm/transparent_hugepage/$k"));
	$want{"thp.$k"} = $v if defined $v;
}
my %gov;
for my $f (glob '/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor')
{
	next unless basename(dirname(dirname($f))) =~ /^cpu\d+$/;
	my $g = slurp_line($f);
	$gov{$g} = 1 if defined $g && $g ne '';
}
$want{'cpufreq.governor'} = join ',', sort keys %gov if %gov;

$want{'server.version'} = $node->safe_psql('postgres', 'SHOW server_version');
$want{'server.version_num'} = $node->safe_psql('postgres', 'SHOW server_version_num');
$want{'server.version_string'} = $node->safe_psql('postgres', 'SELECT version()');
my %cfg = map { split /\|/, $_, 2 } split /\n/,
  $node->safe_psql('postgres', "SELECT name || '|' || setting FROM pg_config WHERE name IN ('CONFIGURE', 'CC', 'CFLAGS')");
# The build options without the build machine's paths: each run from a
# '/' to a blank or a quote is "<path>".
s{/[^ \t'"]*}{<path>}g for values %cfg;
$want{'server.configure'} = $cfg{CONFIGURE} if ($cfg{CONFIGURE} // '') ne '';
$want{'server.cc'} = $cfg{CC} if ($cfg{CC} // '') ne '';
$want{'server.cflags'} = $cfg{CFLAGS} if ($cfg{CFLAGS} // '') ne '';

# Mount options as runs keep them: no path, no secret.
sub options
{
	my @o = grep { !/=\// && !/pass|cred|secret|key/ } split /,/, $_[0];
	return @o ? join(',', @o) : undef;
}

# A device: Linux's dev_t encoding (glibc's major()/minor()).
sub device
{
	my ($role, $path) = @_;
	my $dev = (stat $path)[0];
	die "stat $path: $!" unless defined $dev;
	my $maj = (($dev >> 8) & 0xfff) | (($dev >> 32) & ~0xfff);
	my $min = ($dev & 0xff) | (($dev >> 12) & ~0xff);
	my $real = realpath($path);

	# mountinfo: the mount of that device with the longest mount point
	# above the path (else the last one of the device).
	my ($best, $best_len);
	open my $mi, '<', '/proc/self/mountinfo' or die $!;
	while (my $l = <$mi>)
	{
		chomp $l;
		my ($pre, $post) = split / - /, $l, 2;
		my @f = split / /, $pre;
		next unless $f[2] eq "$maj:$min";
		my @p = split / /, $post;
		(my $mp = $f[4]) =~ s/\\([0-7]{3})/chr(oct($1))/ge;
		my $covers = $mp eq '/' || index("$real/", "$mp/") == 0;
		my $len = $covers ? length $mp : 0;
		next if defined $best && !($covers && $len > $best_len);
		($best, $best_len) = ([ $p[0], $f[5], $p[2] ], $len);
	}
	if ($best)
	{
		$want{"device.$role.fstype"} = $best->[0];
		my $o = options($best->[1]);
		$want{"device.$role.mount_options"} = $o if defined $o;
		$o = options($best->[2]);
		$want{"device.$role.fs_options"} = $o if defined $o;
	}
	return if $maj == 0;
	my $sys = realpath("/sys/dev/block/$maj:$min");
	return unless defined $sys && -e $sys;
	$want{"device.$role.name"} = basename($sys);
	my $disk = -e "$sys/partition" ? dirname($sys) : $sys;
	$want{"device.$role.disk"} = basename($disk);
	my $s = choice(slurp_line("$disk/queue/scheduler"));
	$want{"device.$role.scheduler"} = $s if defined $s;
	for my $k (qw(read_ahead_kb nr_requests rotational))
	{
		my $v = slurp_line("$disk/queue/$k");
		$want{"device.$role.$k"} = $v if defined $v && $v =~ /^-?\d+$/;
	}
}
my $datadir = $node->data_dir;
device('data', $datadir);
device('pg_wal', "$datadir/pg_wal");

is_deeply($env, \%want, 'the environment of the run is what /proc, /sys and mountinfo say');
ok(exists $env->{'kernel.release'} && exists $env->{'device.data.fstype'},
	'the kernel and the data directory\'s filesystem are known');

# --- who reads what ----------------------------------------------------------

# pg_config() is not PUBLIC: a pg_monitor member's run has no configure
# options, the rest is the same.
$node->safe_psql('postgres', "SELECT chronicle.run_begin('monitor'); SELECT chronicle.run_end()",
	extra_params => [ '-U', 'r_monitor' ]);
my $menv = flat('monitor');
ok(!exists $menv->{'server.configure'} && !exists $menv->{'server.cflags'},
	'no configure options for a role that may not call pg_config()');
my %wo = %want;
delete @wo{qw(server.configure server.cc server.cflags)};
is_deeply($menv, \%wo, 'everything else is kept for that role');

# --- settings, those at their default too ------------------------------------

my %set = map { split /\|/, $_, 2 } split /\n/, $node->safe_psql('postgres',
	"SELECT e.key || '|' || e.value FROM chronicle.run r, jsonb_each_text(r.settings) e WHERE r.label = 'super'");
# (io_method is new in 18)
for my $name (split /\n/, $node->safe_psql('postgres', q{
	SELECT name FROM pg_settings
	 WHERE name IN ('data_checksums', 'debug_assertions', 'io_method', 'block_size', 'wal_segment_size',
	                'huge_pages_status') ORDER BY name}))
{
	ok(exists $set{$name}, "$name is kept") or next;
	is($set{$name}, $node->safe_psql('postgres', "SHOW $name"), "$name as SHOW says");
}
# Every kept setting as psql's SHOW shows it (in one psql session), but for
# the redacted ones.
my @names = sort grep { $set{$_} !~ /\*\*\*\*\*\*\*\*/ } keys %set;
my @shown = split /\n/, $node->safe_psql('postgres', join('', map { "SHOW \"$_\";\n" } @names)), -1;
my @differ = grep { $set{ $names[$_] } ne ($shown[$_] // '') } 0 .. $#names;
is(scalar @shown, scalar @names, 'SHOW answered for every kept setting (' . scalar(@names) . ')');
is_deeply([ map { "$names[$_]: $set{$names[$_]} vs $shown[$_]" } @differ ], [],
	'every kept setting equals SHOW');
ok(!exists $set{$_}, "$_ (the session's) is not kept")
  for qw(application_name transaction_isolation is_superuser data_directory);

# --- compare_environment --------------------------------------------------------

is($node->safe_psql('postgres', "SELECT count(*) FROM chronicle.compare_environment('super', 'super')"),
	'0', 'a run does not differ from itself');
$node->safe_psql('postgres', q{
	SELECT chronicle.run_begin('b'); SELECT chronicle.run_end();
	UPDATE chronicle.run SET environment = jsonb_set(environment, '{device,pg_wal,scheduler}', '"bfq"')
	 WHERE label = 'b';
	UPDATE chronicle.run SET environment = environment #- '{thp,defrag}' WHERE label = 'b';});
my $sched = $want{'device.pg_wal.scheduler'} // '';
is($node->safe_psql('postgres',
	"SELECT string_agg(name || '=' || coalesce(value_a, 'NULL') || '/' || coalesce(value_b, 'NULL'), ' ' ORDER BY name)
	   FROM chronicle.compare_environment('super', 'b')"),
	join(' ', sort
		  ("device.pg_wal.scheduler=" . ($sched eq '' ? 'NULL' : $sched) . '/bfq',
		   exists $want{'thp.defrag'} ? ("thp.defrag=$want{'thp.defrag'}/NULL") : ())),
	'compare_environment lists the keys that differ, by dotted name, a missing one as NULL');
$node->safe_psql('postgres', "SELECT chronicle.run_label('old', now() - interval '1 min', now())");
is($node->safe_psql('postgres',
	"SELECT count(*) FROM chronicle.compare_environment('super', 'old') WHERE value_b IS NULL"),
	scalar(keys %want), 'a run without an environment: every key is listed');

my ($ret, $out, $err) = $node->psql('postgres', "SELECT * FROM chronicle.compare_environment('super', 'nope')");
like($err, qr/unknown run "nope"/, 'compare_environment: unknown run');
($ret, $out, $err) = $node->psql('postgres', "SELECT * FROM chronicle.compare_environment(NULL, 'super')");
like($err, qr/must not be NULL/, 'compare_environment: NULL run');
($ret, $out, $err) = $node->psql('postgres', "SELECT * FROM chronicle.compare_environment('super', 'b')",
	extra_params => [ '-U', 'r_monitor' ]);
is($ret, 0, 'pg_monitor may compare environments');

$node->stop;
done_testing();
