/** A namespace's Keystone project (namespace == project). */
export interface Project {
  namespace: string;
  id: string;
  name: string;
}
