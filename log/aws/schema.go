package aws

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/docketlog/docket/log/mysqlindex"
)

// publishSlack is a trigger on Tessera's PubCoord table that records each
// publication one second earlier than Tessera's AWS driver says. The
// driver records the publication time in whole seconds after signing and
// witnessing, and publishes only once the checkpoint interval I has
// passed since then: so a publication could be refused for up to I after
// the previous one, and a lone write that missed the integration tick by
// then waited for the next tick of the publication ticker, up to 2I more.
// With the slack, a tree that grew is published after each integration
// (once a second), or at the next tick of the ticker: a lone write waits
// for one integration tick (up to 1s), one witness round and one upload,
// while checkpoints still come at most twice a second. Only Tessera's
// publication updates publishedAt.
const publishSlack = "CREATE TRIGGER IF NOT EXISTS `DocketPublishSlack` BEFORE UPDATE ON `PubCoord` FOR EACH ROW " +
	"SET NEW.`publishedAt` = IF(NEW.`publishedAt` = OLD.`publishedAt`, NEW.`publishedAt`, NEW.`publishedAt` - 1)"

// fenceTrigger is a trigger on Tessera's SeqCoord table, whose row every
// sequencing transaction of Tessera's AWS driver updates: it fails the
// transaction when the writer it runs for (@docket_writer, set on each of
// Tessera's connections of a docket-log) is fenced, because another
// writer took over claims this one made on an owning connection it lost
// (see mysqlindex.Index). The read of the fence is a locking one, so it
// sees a fence committed before it; and a fence committed after it was
// read holds back the writer that fenced until this transaction ends (it
// reads the sequenced size with a locking read of the same row), so it
// finds what this transaction sequenced.
const fenceTrigger = "CREATE TRIGGER IF NOT EXISTS `DocketFence` BEFORE UPDATE ON `SeqCoord` FOR EACH ROW " +
	"IF @docket_writer IS NOT NULL AND " +
	"(SELECT COUNT(*) FROM `DocketFences` WHERE `writer` = @docket_writer LOCK IN SHARE MODE) > 0 THEN " +
	"SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'docket: this writer is fenced: another writer took over claims it made on a connection it lost'; " +
	"END IF"

// migrate creates Docket's tables in db (see mysqlindex.Migrate), unless
// the database holds a log of Tessera's MySQL driver (-storage mysql).
func migrate(ctx context.Context, db *sql.DB) error {
	var name string
	err := db.QueryRowContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'TreeState'").Scan(&name)
	if err == nil {
		return errors.New("the database holds a log of -storage mysql (the table TreeState); " +
			"-storage aws needs a database of its own: create one and move the log with docket-log migrate")
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("reading the tables: %w", err)
	}
	return mysqlindex.Migrate(ctx, db, SchemaVersion, mysqlindex.Schema)
}
