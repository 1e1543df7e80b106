// Fixture: the OpenStackCloud loop.
export const clouds = 1;
