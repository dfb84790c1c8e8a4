/* SPDX-License-Identifier: Apache-2.0 */
/* Entry point (being written). */
int main(void)
{
    return 2;
}
