package repo

import (
	"context"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// The waiting room's shared state (service.RoomStore, schema version 10):
// its key, each goods' horizon, the instances serving it. Small statements
// on the read pool, a few a second per instance.

// RoomKey returns the key places are signed with, storing fresh when no
// instance has stored one: the first instance's key is everyone's.
func (s *Store) RoomKey(ctx context.Context, fresh []byte) ([]byte, error) {
	db := s.db.WithContext(ctx)
	if err := db.Exec("INSERT IGNORE INTO room_key (id, k) VALUES (1, ?)", fresh).Error; err != nil {
		return nil, translate(err)
	}
	var key []byte
	if err := db.Raw("SELECT k FROM room_key WHERE id = 1").Row().Scan(&key); err != nil {
		return nil, translate(err)
	}
	return key, nil
}

// Horizons reads the horizons of goods; a goods without one is missing.
func (s *Store) Horizons(ctx context.Context, goods []int32) (map[int32]int64, error) {
	out := make(map[int32]int64, len(goods))
	if len(goods) == 0 {
		return out, nil
	}
	rows, err := s.db.WithContext(ctx).Raw("SELECT goods_no, horizon FROM room_horizon WHERE goods_no IN ?", goods).Rows()
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var g int32
		var h int64
		if err := rows.Scan(&g, &h); err != nil {
			return nil, translate(err)
		}
		out[g] = h
	}
	return out, translate(rows.Err())
}

// AdvanceHorizon moves a goods' horizon to at, if that is later: one
// statement, so that instances moving it at once never move it back.
func (s *Store) AdvanceHorizon(ctx context.Context, goodsNo int32, at int64) error {
	return translate(s.db.WithContext(ctx).Exec("INSERT INTO room_horizon (goods_no, horizon) VALUES (?, ?) "+
		"ON DUPLICATE KEY UPDATE horizon = GREATEST(horizon, VALUES(horizon))", goodsNo, at).Error)
}

// RoomMembers records member as seen now and counts the members seen
// within the last within (the database's clock for both).
func (s *Store) RoomMembers(ctx context.Context, member string, within time.Duration) (int, error) {
	db := s.db.WithContext(ctx)
	if err := db.Exec("INSERT INTO room_member (id, seen_at) VALUES (?, NOW(6)) ON DUPLICATE KEY UPDATE seen_at = NOW(6)", member).Error; err != nil {
		return 0, translate(err)
	}
	var n int
	err := db.Raw("SELECT COUNT(*) FROM room_member WHERE seen_at > NOW(6) - INTERVAL ? MICROSECOND", within.Microseconds()).Row().Scan(&n)
	return n, translate(err)
}

var _ service.RoomStore = (*Store)(nil)
