-- A visitor record a publishable key made holds what an anonymous caller
-- typed: it is never matched to reuse a record (docs/decisions.md, "Keys,
-- scopes and what a publishable key may see"). Records made before this
-- migration cannot be told apart and stay matchable, as they were.
ALTER TABLE visitors ADD COLUMN self_registered boolean NOT NULL DEFAULT false;
