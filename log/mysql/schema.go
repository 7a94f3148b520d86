package mysql

import (
	"context"
	"database/sql"
	"fmt"
)

// SchemaVersion is the version of Docket's schema that this package writes
// and reads, recorded in the DocketSchema table. Tessera's own tables carry
// Tessera's compatibility version (the Tessera table).
const SchemaVersion = 1

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

// docketSchema is version 1 of Docket's own tables:
//
//   - DocketLeaves: the strict dedup index, leaf hash → first index, unique
//     on the hash;
//   - DocketIndexState: how many entries, from 0, DocketLeaves covers;
//   - DocketClaims: the hashes that a writer is appending right now, so
//     that two docket-log processes never append the same entry (a claim
//     is deleted once the transaction that indexes its entry has
//     committed). A claim need not outlive its writer, nor a server
//     restart: the table is in memory (ENGINE=MEMORY), so claiming costs
//     no log flush;
//   - the DocketPublishSlack trigger: see PublishSlack.
var docketSchema = []string{
	"CREATE TABLE IF NOT EXISTS `DocketLeaves` (`hash` BINARY(32) NOT NULL, `idx` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`hash`), KEY `idx` (`idx`))",
	"CREATE TABLE IF NOT EXISTS `DocketIndexState` (`id` TINYINT UNSIGNED NOT NULL, `covered` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`id`))",
	"INSERT IGNORE INTO `DocketIndexState` (`id`, `covered`) VALUES (0, 0)",
	"CREATE TABLE IF NOT EXISTS `DocketClaims` (`hash` BINARY(32) NOT NULL, `owner` BIGINT UNSIGNED NOT NULL, `claimed_at` BIGINT NOT NULL, PRIMARY KEY (`hash`)) ENGINE=MEMORY",
	fmt.Sprintf("CREATE TRIGGER IF NOT EXISTS `DocketPublishSlack` BEFORE INSERT ON `Checkpoint` FOR EACH ROW SET NEW.`published_at` = NEW.`published_at` - %d", PublishSlack.Milliseconds()),
}

// migrate creates Tessera's and Docket's tables if they are missing and
// records the schema version, under a named lock so that writers starting
// together do it once. It refuses a database whose recorded version is
// newer than this package's.
func migrate(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK('docket-schema', 60)").Scan(&got); err != nil || got.Int64 != 1 {
		return fmt.Errorf("taking the schema lock: %v", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK('docket-schema')")

	if _, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS `DocketSchema` (`id` TINYINT UNSIGNED NOT NULL, `version` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`id`))"); err != nil {
		return err
	}
	var v int64
	switch err := conn.QueryRowContext(ctx, "SELECT `version` FROM `DocketSchema` WHERE `id` = 0").Scan(&v); {
	case err == sql.ErrNoRows:
		v = 0
	case err != nil:
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("the database has Docket schema version %d, newer than this docket-log's %d: upgrade docket-log", v, SchemaVersion)
	}
	if v == SchemaVersion {
		return addTables(ctx, conn)
	}
	// Version 0 (a new database, or one that only Tessera used) → 1.
	for _, s := range append(tesseraSchema, docketSchema...) {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, "REPLACE INTO `DocketSchema` (`id`, `version`) VALUES (0, ?)", SchemaVersion); err != nil {
		return err
	}
	return addTables(ctx, conn)
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

func addTables(ctx context.Context, conn *sql.Conn) error {
	for _, s := range addedTables {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
	}
	return nil
}
