# Private copies of the PostgreSQL installation the TAP tests run against,
# to install other builds of pg_chronicle into (the 0.1.0 release, the dist
# zip) without touching the shared one.  PostgreSQL installations are
# relocatable: pg_config and the server find their directories relative to
# their own binaries, and PGXS asks pg_config, so "make install" with the
# copy's pg_config installs into the copy.
package PgChronicle::TestInstall;

use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use File::Basename qw(dirname);
use File::Path qw(rmtree);
use Cwd qw(abs_path);
use IPC::Run;
use PostgreSQL::Test::Utils;

our @EXPORT_OK = qw(pg_config_value copy_install remove_extension_files
  git_commit_available run_logged);

# One value of a pg_config ("bindir", "sharedir", ...).
sub pg_config_value
{
	my ($pg_config, $what) = @_;
	my $v = `"$pg_config" --$what`;
	die "$pg_config --$what failed" if $?;
	chomp $v;
	return $v;
}

# Copies the installation whose pg_config is first on PATH (the server under
# test) to $dest.  Returns ($dest) or (undef, why not): an installation whose
# directories are not under one root (Debian's packages) cannot be copied
# as a whole.
sub copy_install
{
	my ($dest) = @_;
	my $root = dirname(pg_config_value('pg_config', 'bindir'));
	for my $what (qw(pkglibdir sharedir))
	{
		my $dir = pg_config_value('pg_config', $what);
		return (undef,
			"the server's $what ($dir) is not under $root: the installation cannot be copied")
		  unless index(abs_path($dir) // '', abs_path($root) . '/') == 0;
	}
	system('cp', '-a', $root, $dest) == 0
	  or die "cp -a $root $dest failed";
	return ($dest);
}

# Removes every file of pg_chronicle from the installation at $root, so
# that what is installed next is all there is.
sub remove_extension_files
{
	my ($root) = @_;
	my $pg_config = "$root/bin/pg_config";
	my $lib = pg_config_value($pg_config, 'pkglibdir');
	my $share = pg_config_value($pg_config, 'sharedir');
	unlink glob("$lib/pg_chronicle.so $lib/bitcode/pg_chronicle.index.bc "
		  . "$share/extension/pg_chronicle.control $share/extension/pg_chronicle--*.sql");
	rmtree("$lib/bitcode/pg_chronicle");
	return;
}

# Whether the tree at $dir is a git checkout that holds $commit.
sub git_commit_available
{
	my ($dir, $commit) = @_;
	return 0 unless -e "$dir/.git";
	return system("git -C '$dir' cat-file -e '$commit^{commit}' >/dev/null 2>&1") == 0;
}

# Runs a command (an array, or IPC::Run's list with '|' between commands)
# with its output in $log; on failure, says so with the log's tail.
sub run_logged
{
	my ($log, $name, @cmd) = @_;
	my $ok = IPC::Run::run(@cmd, '>', $log, '2>&1');
	return 1 if $ok;
	my $text = slurp_file($log);
	my @lines = split /\n/, $text;
	@lines = @lines[ -40 .. -1 ] if @lines > 40;
	Test::More::diag("$name failed; the end of $log:\n" . join("\n", @lines));
	return 0;
}

1;
