// Fixture: a file inside the SecurityGroup kind.
export const isDefaultGroup = 1;
