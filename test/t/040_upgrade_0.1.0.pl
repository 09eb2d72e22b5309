# The upgrade from the 0.1.0 release (the row tables of 0.1.0, converted to
# the packed history by its step to 0.2.0) to this build, with history:
# rows kept, recording resumes, the catalog the same as a fresh CREATE
# EXTENSION.  The test is PgChronicle::TestUpgrade's.
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestUpgrade qw(upgrade_test);

upgrade_test(
	release => '0.1.0',
	commit => '7942f901d8df5dc91e569ae38613e01b85cd6363',
	recorded => [qw(snapshot io_history wal_history database_history run app_transaction app_metric)]);
