package repo

import "context"

// Deployment returns the deployment's identity: a random id the schema's
// version 11 made once, when the database was first migrated, and kept.
func (s *Store) Deployment(ctx context.Context) (string, error) {
	var id string
	if err := s.db.WithContext(ctx).Raw("SELECT identity FROM deployment WHERE id = 1").Row().Scan(&id); err != nil {
		return "", translate(err)
	}
	return id, nil
}

// ZooKeeperPaths returns the ZooKeeper paths the database was last claimed
// under ("" when no instance has claimed it yet).
func (s *Store) ZooKeeperPaths(ctx context.Context) (string, error) {
	var p string
	if err := s.db.WithContext(ctx).Raw("SELECT zk_paths FROM deployment WHERE id = 1").Row().Scan(&p); err != nil {
		return "", translate(err)
	}
	return p, nil
}

// SetZooKeeperPaths records paths as the database's, if the record is
// still was (the caller's read): false when another instance changed it
// meanwhile.
func (s *Store) SetZooKeeperPaths(ctx context.Context, was, paths string) (bool, error) {
	res := s.db.WithContext(ctx).Exec("UPDATE deployment SET zk_paths = ? WHERE id = 1 AND zk_paths = ?", paths, was)
	if res.Error != nil {
		return false, translate(res.Error)
	}
	return res.RowsAffected == 1, nil
}
