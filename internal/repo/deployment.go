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
