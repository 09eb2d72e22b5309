# The release bundle: make dist builds pg_chronicle-<version>.zip as PGXN
# takes it (git archive of HEAD under a pg_chronicle-<version>/ prefix).  Its
# files are exactly the committed ones less those .gitattributes leaves out,
# with no build products (the install and upgrade scripts are built from
# src/sql and src/upgrade); its META.json passes tools/check-meta.py; and it
# installs with pgxnclient's "pgxn install" (from the local zip, offline)
# into a private copy of the server's installation, where CREATE EXTENSION
# and a snapshot work and the update paths are there, one script from each
# earlier release (the Makefile's UPGRADE_FROM).  Without pgxnclient, the
# zip is unpacked and installed with make install, and the test says so.
#
# Skips (skip_all, with the reason) where there is no git checkout (make
# dist archives a commit) or the installation cannot be copied.
#
# one_version: the zip and its installation do not depend on the server's version:
# tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use Cwd qw(getcwd);
use File::Copy qw(move);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgChronicle::TestInstall
  qw(copy_install remove_extension_files git_commit_available run_logged);
use PgChronicle::TestNode qw(chronicle_node poll_ok);

my $srcdir = getcwd();    # prove runs in the source tree
plan skip_all => "$srcdir is not a git checkout: make dist archives a commit"
  unless git_commit_available($srcdir, 'HEAD');

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $logdir = $PostgreSQL::Test::Utils::log_path;
my ($version) = slurp_file("$srcdir/pg_chronicle.control") =~ /default_version = '([^']+)'/
  or die 'no default_version in pg_chronicle.control';
my $dist = "pg_chronicle-$version";
# The releases an upgrade starts from, oldest first, and their steps to the
# next (src/upgrade/<from>--<to>-before.sql and -after.sql).
my ($upgrade_from) = slurp_file("$srcdir/Makefile") =~ /^UPGRADE_FROM\s*=\s*(.*?)\s*$/m
  or die 'no UPGRADE_FROM in the Makefile';
my @upgrade_from = split ' ', $upgrade_from;
my @upgrade_to = (@upgrade_from[ 1 .. $#upgrade_from ], $version);
my @steps = map { "$upgrade_from[$_]--$upgrade_to[$_]" } 0 .. $#upgrade_from;

ok(run_logged("$logdir/041_make_dist.log", 'make dist', [ 'make', '-C', $srcdir, '-s', 'dist' ]),
	'make dist');
ok(-f "$srcdir/$dist.zip", "make dist wrote $dist.zip");
move("$srcdir/$dist.zip", "$tmp/$dist.zip") or die "move: $!";
my $zip = "$tmp/$dist.zip";

# The zip's entries, with Python's zipfile (no unzip needed).
my $zip_py = 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[2]); '
  . 'print("\n".join(z.namelist())) if sys.argv[1] == "list" else z.extractall(sys.argv[3])';
my ($list, $err);
IPC::Run::run([ 'python3', '-c', $zip_py, 'list', $zip ], '>', \$list, '2>', \$err)
  or die "cannot read $zip: $err";
my @entries = split /\n/, $list;
my @outside = grep { index($_, "$dist/") != 0 } @entries;
is(join(', ', @outside), '', "every entry is under $dist/");
my %files = map { substr($_, length("$dist/")) => 1 } grep { !m{/$} } @entries;

# Exactly the committed files, less those export-ignore'd (a file or one
# of its directories).
my @committed = split /\n/, `git -C '$srcdir' ls-tree -r --name-only HEAD`;
die 'git ls-tree failed' if $?;
my %paths;
for my $f (@committed)
{
	my @parts = split m{/}, $f;
	$paths{ join '/', @parts[ 0 .. $_ ] } = 1 for 0 .. $#parts;
}
my ($attrs, $attr_err);
IPC::Run::run([ 'git', '-C', $srcdir, 'check-attr', '--stdin', 'export-ignore' ],
	'<', \(join("\n", sort keys %paths) . "\n"), '>', \$attrs, '2>', \$attr_err)
  or die "git check-attr: $attr_err";
my %ignored = map { /^(.*): export-ignore: set$/ ? ($1 => 1) : () } split /\n/, $attrs;
my @expected = grep {
	my @parts = split m{/};
	!grep { $ignored{ join '/', @parts[ 0 .. $_ ] } } 0 .. $#parts;
} @committed;
my @missing = grep { !$files{$_} } @expected;
my %expected = map { $_ => 1 } @expected;
my @extra = grep { !$expected{$_} } sort keys %files;
is(join(', ', @missing), '', 'every committed file is in the zip');
is(join(', ', @extra), '', 'the zip holds nothing but committed files');
# The install and upgrade scripts are built (src/sql, src/upgrade).
my @built = grep {
	/\.(o|so|bc|zip)$/ || /^pg_chronicle--.*\.sql$/
	  || m{^(tmp_check|tmp_check_regress|results|log)/} || /^regression\./
} sort keys %files;
is(join(', ', @built), '', 'no build products in the zip');
is(join(', ', grep { m{^\.git|^\.ci/} } sort keys %files), '', 'no .git*, no .ci/ in the zip');
for my $f (qw(META.json Makefile pg_chronicle.control LICENSE CHANGELOG.md README.md
	src/sql/00_core.sql src/upgrade/code.awk),
	map { ("src/upgrade/$_-before.sql", "src/upgrade/$_-after.sql") } @steps)
{
	ok($files{$f}, "the zip has $f");
}

# Its META.json, checked where it lies in the unpacked zip.
IPC::Run::run([ 'python3', '-c', $zip_py, 'extract', $zip, "$tmp/unpacked" ], '2>', \$err)
  or die "cannot unpack $zip: $err";
ok(run_logged("$logdir/041_check_meta.log", 'tools/check-meta.py on the zip',
		[ 'python3', "$srcdir/tools/check-meta.py", "$tmp/unpacked/$dist/META.json" ]),
	"the zip's META.json passes tools/check-meta.py");
like(slurp_file("$tmp/unpacked/$dist/META.json"), qr/"version"\s*:\s*"\Q$version\E"/,
	"the zip's META.json is version $version");

# Installed from the zip into a copy of the server's installation.
my ($inst, $why) = copy_install("$tmp/pg");
SKIP:
{
	skip $why, 7 unless $inst;
	remove_extension_files($inst);
	my $pg_config = "$inst/bin/pg_config";
	if (system('command -v pgxn >/dev/null 2>&1') == 0)
	{
		ok(run_logged("$logdir/041_pgxn_install.log", 'pgxn install',
				[ 'pgxn', 'install', '--pg_config', $pg_config, '--make', 'make', $zip ]),
			'pgxn install of the zip');
	}
	else
	{
		ok(run_logged("$logdir/041_make_install.log", 'make install',
				[ 'make', '-C', "$tmp/unpacked/$dist", '-s', "PG_CONFIG=$pg_config", 'install' ]),
			'make install of the unpacked zip (pgxnclient is not installed: tools/install-deps.sh installs it)');
	}

	my $node = chronicle_node('dist', install_path => $inst, conf => q{
chronicle.snapshot_interval = '500ms'
});
	is($node->safe_psql('postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'pg_chronicle'"),
		$version, "CREATE EXTENSION from the zip's install: version $version");
	is($node->safe_psql('postgres', q{
		SELECT string_agg(version, ' ' ORDER BY version) FROM pg_available_extension_versions
		 WHERE name = 'pg_chronicle'}),
		$version, "pg_available_extension_versions: $version");
	is($node->safe_psql('postgres', qq{
		SELECT string_agg(source || ' ' || path, ', ' ORDER BY source) FROM pg_extension_update_paths('pg_chronicle')
		 WHERE target = '$version' AND path IS NOT NULL}),
		join(', ', map { "$_ $_--$version" } @upgrade_from),
		"the zip's build installs one upgrade script from each of @upgrade_from (built from src/upgrade)");
	my $ts = $node->safe_psql('postgres', 'SELECT chronicle.snapshot()');
	cmp_ok($node->safe_psql('postgres', "SELECT count(*) FROM chronicle.io_history WHERE ts = '$ts'"),
		'>', 0, 'chronicle.snapshot() records');
	poll_ok($node, 'postgres',
		"SELECT count(*) >= 2 FROM chronicle.snapshot WHERE collector = 'worker'",
		'the collector of the zip records');
	is($node->safe_psql('postgres', 'SELECT state FROM chronicle.status()'),
		'recording', 'status() says recording');
	$node->stop;
}

done_testing();
