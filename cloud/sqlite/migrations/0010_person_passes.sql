-- Personal passes: pass_issued_at is the issue time of the person's one
-- current pass, in microseconds of a whole second (a token carries whole
-- Unix seconds). Every person has a pass from their creation: existing
-- rows take their created_at cut to the second. A reissue moves it on, and
-- a token of any other issue time is refused at the gates.
--
-- (0010, not 0009: 0009 is the attendance domain's. Versions need not be
-- consecutive; each is applied once.)
ALTER TABLE people ADD COLUMN pass_issued_at INTEGER NOT NULL DEFAULT 0;
UPDATE people SET pass_issued_at = (created_at / 1000000) * 1000000;
