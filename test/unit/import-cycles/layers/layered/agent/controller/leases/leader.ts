// Fixture: the Lease.
export const leader = 1;
