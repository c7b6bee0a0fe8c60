package repo

import (
	"context"
	"fmt"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/seckill-zk/seckill-zk/migrations"
)

// Migrate applies the schema's versions the database lacks (see
// migrations.NewProvider) and returns the versions it applied.
func (s *Store) Migrate(ctx context.Context) ([]int64, error) {
	p, err := s.migrations()
	if err != nil {
		return nil, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("repo: migrate: %w", translate(err))
	}
	var applied []int64
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// MigrationState is one version of the schema in a database.
type MigrationState struct {
	Version   int64
	File      string
	Applied   bool
	AppliedAt time.Time
}

// MigrationStatus lists the schema's versions and which the database has.
func (s *Store) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	p, err := s.migrations()
	if err != nil {
		return nil, err
	}
	status, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("repo: migration status: %w", translate(err))
	}
	files := map[int64]string{}
	for _, v := range migrations.Versions() {
		files[v.Version] = v.File
	}
	out := make([]MigrationState, len(status))
	for i, st := range status {
		out[i] = MigrationState{Version: st.Source.Version, File: files[st.Source.Version],
			Applied: st.State == goose.StateApplied, AppliedAt: st.AppliedAt}
	}
	return out, nil
}

func (s *Store) migrations() (*goose.Provider, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, fmt.Errorf("repo: %w", err)
	}
	p, err := migrations.NewProvider(sqlDB, nil)
	if err != nil {
		return nil, fmt.Errorf("repo: migrations: %w", err)
	}
	return p, nil
}
