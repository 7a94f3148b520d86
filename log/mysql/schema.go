package mysql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/docketlog/docket/log/mysqlindex"
)

// SchemaVersion is the version of Docket's schema that this package writes
// and reads, recorded in the DocketSchema table. Tessera's own tables carry
// Tessera's compatibility version (the Tessera table). Version 2 keeps the
// dedup index's claims on disk (see mysqlindex.Schema).
const SchemaVersion = 2

// tesseraSchema is the schema of Tessera v1.0.4's MySQL driver
// (storage/mysql/schema.sql), which its New expects and does not create.
var tesseraSchema = []string{
	"CREATE TABLE IF NOT EXISTS `Tessera` (`id` TINYINT UNSIGNED NOT NULL, `compatibilityVersion` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`id`))",
	"INSERT IGNORE INTO `Tessera` (`id`, `compatibilityVersion`) VALUES (0, 1)",
	"CREATE TABLE IF NOT EXISTS `Checkpoint` (`id` TINYINT UNSIGNED NOT NULL, `note` MEDIUMBLOB NOT NULL, `published_at` BIGINT NOT NULL, PRIMARY KEY (`id`))",
	"CREATE TABLE IF NOT EXISTS `TreeState` (`id` TINYINT UNSIGNED NOT NULL, `size` BIGINT UNSIGNED NOT NULL, `root` TINYBLOB NOT NULL, PRIMARY KEY (`id`))",
	"CREATE TABLE IF NOT EXISTS `Subtree` (`level` TINYINT UNSIGNED NOT NULL, `index` BIGINT UNSIGNED NOT NULL, `nodes` MEDIUMBLOB NOT NULL, PRIMARY KEY (`level`, `index`))",
	"CREATE TABLE IF NOT EXISTS `TiledLeaves` (`tile_index` BIGINT UNSIGNED NOT NULL, `size` SMALLINT UNSIGNED NOT NULL, `data` LONGBLOB NOT NULL, PRIMARY KEY (`tile_index`))",
}

// docketSchema is Docket's own tables: the dedup index's
// (mysqlindex.Schema) and the DocketPublishSlack trigger (see PublishSlack).
var docketSchema = append(mysqlindex.Schema[:len(mysqlindex.Schema):len(mysqlindex.Schema)],
	fmt.Sprintf("CREATE TRIGGER IF NOT EXISTS `DocketPublishSlack` BEFORE INSERT ON `Checkpoint` FOR EACH ROW SET NEW.`published_at` = NEW.`published_at` - %d", PublishSlack.Milliseconds()))

// migrate creates Tessera's and Docket's tables if they are missing and
// records the schema version (see mysqlindex.Migrate).
func migrate(ctx context.Context, db *sql.DB) error {
	// Version 0 (a new database, or one that only Tessera used) → 1.
	if err := mysqlindex.Migrate(ctx, db, SchemaVersion, append(tesseraSchema, docketSchema...)); err != nil {
		return err
	}
	return addTables(ctx, db)
}

// addedTables are tables added since version 1 that no docket-log needs
// to find, so they need no new version (which would make older writers
// refuse the database during a rolling upgrade): each start creates them
// if they are missing.
//
//   - DocketProbe: the one row that Storage.Probe rewrites.
var addedTables = []string{
	"CREATE TABLE IF NOT EXISTS `DocketProbe` (`id` TINYINT UNSIGNED NOT NULL, `at` BIGINT NOT NULL, PRIMARY KEY (`id`))",
}

func addTables(ctx context.Context, db *sql.DB) error {
	for _, s := range addedTables {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
	}
	return nil
}
