# What the TAP tests of test/t share: a node with pg_chronicle preloaded and
# installed, and a poll that is a test of its own.
#
#   use FindBin;
#   use lib "$FindBin::RealBin/../perl";
#   use PgChronicle::TestNode qw(chronicle_node poll_until);
#
#   my $node = chronicle_node('primary', conf => q{
#   chronicle.snapshot_interval = '200ms'
#   });
#   poll_until($node, 'postgres',
#       "SELECT count(*) >= 5 FROM chronicle.snapshot WHERE collector = 'worker'",
#       'the worker records snapshots');
package PgChronicle::TestNode;

use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

our @EXPORT_OK = qw(chronicle_node poll_ok poll_until);

# A new node $name (of the installation install_path, default the one on
# PATH): init (with the options of init => {...}), then in
# postgresql.conf shared_preload_libraries = preload (default
# 'pg_chronicle'; undef: no such line) and the lines of conf; then (unless
# start => 0) start it and CREATE EXTENSION each of extensions (default
# pg_chronicle; [] for none; "pg_chronicle VERSION '0.1.0'" works too) in
# database postgres, in that order.
sub chronicle_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name,
		defined $opt{install_path} ? (install_path => $opt{install_path}) : ());
	$node->init(%{ $opt{init} // {} });
	my $preload = exists $opt{preload} ? $opt{preload} : 'pg_chronicle';
	my $conf = '';
	$conf .= "\nshared_preload_libraries = '$preload'" if defined $preload;
	$conf .= "\n" . $opt{conf} if defined $opt{conf};
	$node->append_conf('postgresql.conf', "$conf\n") if $conf ne '';
	return $node if exists $opt{start} && !$opt{start};
	$node->start;
	my @extensions = @{ $opt{extensions} // ['pg_chronicle'] };
	$node->safe_psql('postgres',
		join('; ', map { "CREATE EXTENSION $_" } @extensions))
	  if @extensions;
	return $node;
}

# Runs $query in $db every 0.1 s until it returns $expected (default 't'),
# for timeout_default seconds by the clock (a query that waits behind a lock
# counts its time; psql failing, e.g. during a crash restart, is tried
# again).  Then it is a test named $name: passed, or failed with
# the last value seen (or the last error) against $expected.  Returns
# whether it passed.
sub poll_ok
{
	my ($node, $db, $query, $name, $expected) = @_;
	$expected //= 't';
	my $timeout = $PostgreSQL::Test::Utils::timeout_default;
	my $deadline = time() + $timeout;
	my ($ret, $out, $err);
	while (1)
	{
		# While the server restarts psql may also die of a broken pipe.
		eval { ($ret, $out, $err) = $node->psql($db, $query); 1 }
		  or ($ret, $out, $err) = (-1, '', $@);
		if ($ret == 0 && $out eq $expected)
		{
			pass($name);
			return 1;
		}
		last if time() >= $deadline;
		usleep(100_000);
	}
	return is($ret == 0 ? $out : "error: $err", $expected,
		"$name (polled for $timeout s)");
}

# poll_ok, and when it fails the test script stops there: what follows
# depends on it.
sub poll_until
{
	my ($node, $db, $query, $name, $expected) = @_;
	poll_ok($node, $db, $query, $name, $expected)
	  or die "stopping: $name did not happen\n";
	return 1;
}

1;
