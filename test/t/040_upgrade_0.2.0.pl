# The upgrade from the 0.2.0 release (the packed history) to this build,
# with history: rows kept, recording resumes, the catalog the same as a
# fresh CREATE EXTENSION.  The test is PgChronicle::TestUpgrade's.
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestUpgrade qw(upgrade_test);

upgrade_test(
	release => '0.2.0',
	commit => '68e309ecd12f6a0547dc245d5a0afd667468c62f',
	recorded => [qw(snapshot history history_key run app_transaction app_metric)]);
