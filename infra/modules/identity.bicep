// The user-assigned managed identity both apps run as: it pulls the image, reads the Key Vault
// secrets and calls Azure OpenAI (AZURE_CLIENT_ID tells DefaultAzureCredential to use it).
param location string
param tags object
param name string

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: name
  location: location
  tags: tags
}

output id string = identity.id
output principalId string = identity.properties.principalId
output clientId string = identity.properties.clientId
