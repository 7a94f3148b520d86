package mysqlindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"
)

// Connect returns a pool of at most n connections (n ≤ 0: 64) to the
// database named in dsn (go-sql-driver form,
// user:password@tcp(host:3306)/dbname), which must name a database, once
// the server answers. Arguments are interpolated into statements by the
// driver (interpolateParams).
func Connect(ctx context.Context, dsn string, n int) (*sql.DB, error) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql dsn: %w", err)
	}
	if cfg.DBName == "" {
		return nil, errors.New("mysql dsn: no database name (user:password@tcp(host:3306)/dbname)")
	}
	if n <= 0 {
		n = 64
	}
	// One round trip per statement: without it the driver prepares,
	// executes and closes a server-side statement for every query with
	// arguments, which made a claim three (28% of a writer's CPU).
	cfg.InterpolateParams = true
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("mysql: %w", err)
	}
	return db, nil
}

// Schema is the DDL of the index's tables, each statement idempotent:
//
//   - DocketLeaves: leaf hash → first index, unique on the hash;
//   - DocketIndexState: how many entries, from 0, DocketLeaves covers;
//   - DocketClaims: the hashes that a writer is appending right now, so
//     that two docket-log processes never append the same entry. A claim
//     ends in the transaction that indexes its entry, or once its writer
//     knows the entry was not appended; it must survive a server restart
//     (a commit whose answer a restart lost may have appended it), so the
//     table is InnoDB. Version 1 had it in memory (ENGINE=MEMORY): Migrate
//     converts it (with ALTER, needed only then);
//   - DocketOwners and DocketFences: the writer (a process's id) of each
//     owning connection, and the writers fenced for an owning connection
//     they lost (see Index). Version 3 of package aws's schema added them.
var Schema = []string{
	"CREATE TABLE IF NOT EXISTS `DocketLeaves` (`hash` BINARY(32) NOT NULL, `idx` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`hash`), KEY `idx` (`idx`))",
	"CREATE TABLE IF NOT EXISTS `DocketIndexState` (`id` TINYINT UNSIGNED NOT NULL, `covered` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`id`))",
	"INSERT IGNORE INTO `DocketIndexState` (`id`, `covered`) VALUES (0, 0)",
	"CREATE TABLE IF NOT EXISTS `DocketClaims` (`hash` BINARY(32) NOT NULL, `owner` BIGINT UNSIGNED NOT NULL, `claimed_at` BIGINT NOT NULL, PRIMARY KEY (`hash`)) ENGINE=InnoDB",
	"CREATE TABLE IF NOT EXISTS `DocketOwners` (`owner` BIGINT UNSIGNED NOT NULL, `writer` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`owner`)) ENGINE=InnoDB",
	"CREATE TABLE IF NOT EXISTS `DocketFences` (`writer` BIGINT UNSIGNED NOT NULL, `owner` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`writer`, `owner`)) ENGINE=InnoDB",
}

// Migrate brings Docket's tables in db to version: unless the table
// DocketSchema records that version, it runs stmts (idempotent DDL that
// creates them from any older version, Schema among them) and records it.
// It runs under a named lock, so that writers starting together migrate
// once, and refuses a database whose recorded version is newer.
func Migrate(ctx context.Context, db *sql.DB, version int64, stmts []string) error {
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
	if v > version {
		return fmt.Errorf("the database has Docket schema version %d, newer than this docket-log's %d: upgrade docket-log", v, version)
	}
	if v == version {
		return nil
	}
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
	}
	// Version 1 kept the claims in memory.
	var engine string
	err = conn.QueryRowContext(ctx, "SELECT `ENGINE` FROM information_schema.TABLES WHERE `TABLE_SCHEMA` = DATABASE() AND `TABLE_NAME` = 'DocketClaims'").Scan(&engine)
	if err != nil && err != sql.ErrNoRows {
		return err
	}
	if err == nil && !strings.EqualFold(engine, "InnoDB") {
		if _, err := conn.ExecContext(ctx, "ALTER TABLE `DocketClaims` ENGINE=InnoDB"); err != nil {
			return fmt.Errorf("moving the claims to disk (ALTER TABLE DocketClaims ENGINE=InnoDB, once, as a user with ALTER): %w", err)
		}
	}
	_, err = conn.ExecContext(ctx, "REPLACE INTO `DocketSchema` (`id`, `version`) VALUES (0, ?)", version)
	return err
}
