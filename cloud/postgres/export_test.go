package postgres

import "context"

// Setting returns a run-time setting of one of the store's connections.
func (s *Store) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v)
	return v, err
}

// PreparedPlans returns how often the statements prepared on the store's
// connection whose text holds sub were planned generic and custom
// (pg_prepared_statements, which is per connection: the store's pool
// must hold one).
func (s *Store) PreparedPlans(ctx context.Context, sub string) (generic, custom int64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0)::bigint, coalesce(sum(custom_plans), 0)::bigint
		FROM pg_prepared_statements WHERE strpos(statement, $1) > 0`, sub).Scan(&generic, &custom)
	return generic, custom, err
}
