package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/svc-vms/svc/cloud/kek"
	"github.com/svc-vms/svc/cloud/storedoc"
)

// reseal brings the values of every sealed column under keys's current
// KEK (kek.Ring.Reseal) and returns how many it rewrote. A value that does
// not open (altered, moved from another row, or under a KEK the ring does
// not hold) is an error naming its row: the store does not start on
// secrets it cannot read.
func reseal(ctx context.Context, tx *sql.Tx, keys *kek.Ring) (int, error) {
	n := 0
	for _, c := range storedoc.SealedColumns {
		q := fmt.Sprintf(`SELECT %s, %s FROM %s`, strings.Join(c.Keys, ", "), c.Column, c.Table)
		if c.Nullable {
			q += ` WHERE ` + c.Column + ` IS NOT NULL`
		}
		type row struct {
			key []string
			v   []byte
		}
		var todo []row
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			return 0, fmt.Errorf("reseal %s.%s: %w", c.Table, c.Column, err)
		}
		for rows.Next() {
			r := row{key: make([]string, len(c.Keys))}
			dst := make([]any, 0, len(c.Keys)+1)
			for i := range r.key {
				dst = append(dst, &r.key[i])
			}
			if err := rows.Scan(append(dst, &r.v)...); err != nil {
				rows.Close()
				return 0, fmt.Errorf("reseal %s.%s: %w", c.Table, c.Column, err)
			}
			out, changed, err := c.Reseal(keys, r.v, r.key...)
			if err != nil {
				rows.Close()
				return 0, fmt.Errorf("reseal: %w", err)
			}
			if changed {
				todo = append(todo, row{key: r.key, v: out})
			}
		}
		if err := rows.Close(); err != nil {
			return 0, fmt.Errorf("reseal %s.%s: %w", c.Table, c.Column, err)
		}
		if err := rows.Err(); err != nil {
			return 0, fmt.Errorf("reseal %s.%s: %w", c.Table, c.Column, err)
		}
		where := make([]string, len(c.Keys))
		for i, k := range c.Keys {
			where[i] = k + ` = ?`
		}
		update := fmt.Sprintf(`UPDATE %s SET %s = ? WHERE %s`, c.Table, c.Column, strings.Join(where, ` AND `))
		for _, r := range todo {
			args := []any{c.Arg(r.v)}
			for _, k := range r.key {
				args = append(args, k)
			}
			if _, err := tx.ExecContext(ctx, update, args...); err != nil {
				return 0, fmt.Errorf("reseal %s.%s of %s: %w", c.Table, c.Column, strings.Join(r.key, " "), err)
			}
		}
		n += len(todo)
	}
	return n, nil
}
