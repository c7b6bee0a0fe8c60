package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/repo"
)

// The schema's commands: shop migrate, migrate status, migrate wait.

func migrate(ctx context.Context, cfg Config, log *slog.Logger) error {
	store, err := openStore(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	applied, err := store.Migrate(ctx)
	if err != nil {
		return err
	}
	log.Info("schema up to date", "applied", applied)
	return nil
}

// migrationStates opens the store for one look at the schema's versions.
func migrationStates(ctx context.Context, cfg Config) ([]repo.MigrationState, error) {
	store, err := openStore(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return store.MigrationStatus(ctx)
}

// migrateWait returns once MySQL answers and has every schema version, or
// fails after timeout naming what it last saw.
func migrateWait(ctx context.Context, cfg Config, timeout time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var logged time.Time
	for {
		last := schemaCurrent(ctx, cfg)
		if last == nil {
			log.Info("the schema is up to date")
			return nil
		}
		if time.Since(logged) >= 10*time.Second {
			log.Info("waiting for the schema", "why", last)
			logged = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("migrate wait: not up to date after %v: %w", timeout, last)
		case <-time.After(2 * time.Second):
		}
	}
}

// schemaCurrent is nil when MySQL answers and has every schema version.
func schemaCurrent(ctx context.Context, cfg Config) error {
	states, err := migrationStates(ctx, cfg)
	if err != nil {
		return err
	}
	for _, st := range states {
		if !st.Applied {
			return fmt.Errorf("version %d (%s) is not applied: run shop migrate", st.Version, st.File)
		}
	}
	return nil
}

// migrateStatus prints the schema's versions and which the database has.
func migrateStatus(ctx context.Context, cfg Config, stdout io.Writer) error {
	states, err := migrationStates(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-8s %-8s %-25s %s\n", "version", "state", "applied at", "file")
	for _, st := range states {
		state, at := "pending", "-"
		if st.Applied {
			state, at = "applied", st.AppliedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(stdout, "%-8d %-8s %-25s %s\n", st.Version, state, at, st.File)
	}
	return nil
}
