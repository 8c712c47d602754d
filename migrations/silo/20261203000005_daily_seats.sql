-- Seats held each day, as the membership pull measured them (the most active members seen that
-- day, in the billing time zone the fleet names): what the silo reports to the fleet for billing,
-- kept so that days the fleet could not be reached are reported when it can again.
CREATE TABLE daily_seats (
    day          date PRIMARY KEY,
    active_seats integer NOT NULL CONSTRAINT daily_seats_range CHECK (active_seats >= 0),
    measured_at  timestamptz NOT NULL DEFAULT now()
);
